/* The session bus connection every part of the shim uses, ready within the caller's
   deadline, and kept for the life of the process. */
#include "internal.h"

/* GLib's shared session bus connection (g_bus_get_sync) is set up by a handshake that
   waits without end when the bus does not answer (poll with no timeout: measured 9 s of a
   10 s SIGSTOP of dbus-daemon), and a second caller waits on the first one's lock. So the
   handshake runs on a thread of its own, never cancelled (the shared connection would keep
   the cancellation as its failure), callers wait for it only until their deadline, and the
   connection is kept once made: a connection given up when its last user let go (as after a
   call stopped at its deadline) had to be made again, on a bus that did not answer. It is
   dropped only once closed (the bus went away), so the next call makes a new one. */
static GMutex bus_lock;
static GCond bus_settled;
static GDBusConnection *kept_bus;   /* ready, until it closes */
static gboolean connecting;         /* a handshake runs */
static guint64 handshakes_ended;
static GError *last_failure;        /* why the last handshake failed, if it did */

static gpointer
connect_in_background (gpointer unused)
{
    GError *error = NULL;
    GDBusConnection *bus = g_bus_get_sync (G_BUS_TYPE_SESSION, NULL, &error);
    if (bus != NULL) {
        g_dbus_connection_set_exit_on_close (bus, FALSE);
        /* GLib hands out its shared connection while anyone holds it, closed or not. */
        if (g_dbus_connection_is_closed (bus)) {
            g_set_error_literal (&error, G_IO_ERROR, G_IO_ERROR_CLOSED, "the connection to the session bus was closed");
            g_clear_object (&bus);
        }
    }
    g_mutex_lock (&bus_lock);
    kept_bus = bus;
    g_clear_error (&last_failure);
    last_failure = error;
    connecting = FALSE;
    handshakes_ended++;
    g_cond_broadcast (&bus_settled);
    g_mutex_unlock (&bus_lock);
    return NULL;
}

GDBusConnection *
sd_session_bus_until (gint64 deadline_us, GError **error)
{
    GDBusConnection *bus = NULL;
    g_mutex_lock (&bus_lock);
    if (kept_bus != NULL && g_dbus_connection_is_closed (kept_bus))
        g_clear_object (&kept_bus);
    if (kept_bus == NULL && !connecting) {
        GThread *thread = g_thread_try_new ("SecureDictionary.bus", connect_in_background, NULL, error);
        if (thread == NULL) {
            g_mutex_unlock (&bus_lock);
            return NULL;
        }
        g_thread_unref (thread);
        connecting = TRUE;
    }
    /* Wait for the handshake running now, whoever started it. */
    guint64 awaited = handshakes_ended + (kept_bus == NULL ? 1 : 0);
    while (kept_bus == NULL && handshakes_ended < awaited)
        if (!g_cond_wait_until (&bus_settled, &bus_lock, deadline_us))
            break;
    if (kept_bus != NULL)
        bus = g_object_ref (kept_bus);
    else if (handshakes_ended >= awaited && last_failure != NULL)
        g_propagate_error (error, g_error_copy (last_failure));
    else
        g_set_error_literal (error, G_IO_ERROR, G_IO_ERROR_TIMED_OUT, "the session bus did not answer in time");
    g_mutex_unlock (&bus_lock);
    return bus;
}
