#ifndef CSECRETSHIM_INTERNAL_H
#define CSECRETSHIM_INTERNAL_H
/* What the shim's files share, and Swift does not see. */
#include "include/CSecretShim.h"

/* One asynchronous D-Bus call awaited in a main context of the caller's own: pass
   sd_pending_call_answered and a zeroed SdPendingCall to g_dbus_connection_call, then
   iterate the context until `done`. */
typedef struct {
    gboolean done;
    GVariant *reply;
    GError *error;
} SdPendingCall;
void sd_pending_call_answered(GObject *source, GAsyncResult *result, gpointer data);

/* Iterates `context` until *done, or until deadline_us passed; returns *done. */
gboolean sd_iterate_until(GMainContext *context, const gboolean *done, gint64 deadline_us);

#endif
