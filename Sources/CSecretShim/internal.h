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

/* session_bus.c: sends `method` of org.freedesktop.DBus on `bus`, its answer (of reply_type)
   to `call` (sd_pending_call_answered), in the thread's default main context. */
void sd_call_bus(GDBusConnection *bus, const char *method, GVariant *parameters, const char *reply_type,
                 GCancellable *cancellable, SdPendingCall *call);

/* Ends a call sent with `cancellable`: cancelled unless answered, its callback awaited (a
   cancelled call's comes at once), its reply and error dropped. */
void sd_end_call(GMainContext *context, SdPendingCall *call, GCancellable *cancellable);

#endif
