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

/* session_bus.c: GLib's shared session bus connection, set not to exit the process when it
   closes (a new reference), once it is ready; NULL with error set when there is no session
   bus, or (G_IO_ERROR_TIMED_OUT) when it is not ready by deadline_us, on
   g_get_monotonic_time()'s clock. Its handshake goes on after the deadline, on a thread of
   its own, and the connection is kept until it closes: no caller waits for the bus past its
   deadline, and a call after one stopped at its deadline finds the connection ready. */
GDBusConnection *sd_session_bus_until(gint64 deadline_us, GError **error);

/* Iterates `context` until *done, or until deadline_us passed; returns *done. */
gboolean sd_iterate_until(GMainContext *context, const gboolean *done, gint64 deadline_us);

#endif
