/* The Secret portal: a sandboxed app's master secret, from xdg-desktop-portal (see CSecretPortal.h). */
#include "include/CSecretPortal.h"
#include <CSecretShim.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>
#include <gio/gunixfdlist.h>
#include <glib-unix.h>

#define PORTAL_BUS_NAME "org.freedesktop.portal.Desktop"

typedef struct {
    gboolean answered;
    guint32 response;
} PortalWait;

static void
on_response (GDBusConnection *connection, const gchar *sender, const gchar *path,
             const gchar *interface, const gchar *signal, GVariant *parameters, gpointer data)
{
    PortalWait *wait = data;
    g_variant_get (parameters, "(u@a{sv})", &wait->response, NULL);
    wait->answered = TRUE;
}

/* Reads what the portal wrote: waits (until the deadline) for the first bytes, then takes
   what is there until the pipe is empty or closed. The backend wrote everything before
   the portal answered, so an empty pipe after the first bytes means the end, whether or
   not every copy of the write end is closed yet. */
static gboolean
read_secret (int fd, gint64 deadline, guint8 *buffer, gsize capacity, gsize *length, GError **error)
{
    gsize total = 0;
    for (;;) {
        struct pollfd ready = { .fd = fd, .events = POLLIN };
        int waited = poll (&ready, 1, total == 0 ? sd_remaining_ms (deadline) : 0);
        if (waited < 0 && errno == EINTR)
            continue;
        if (waited < 0) {
            g_set_error (error, G_IO_ERROR, g_io_error_from_errno (errno), "poll: %s", g_strerror (errno));
            return FALSE;
        }
        if (waited == 0) {
            if (total > 0)
                break;
            g_set_error_literal (error, G_IO_ERROR, G_IO_ERROR_TIMED_OUT,
                                 "the Secret portal answered but wrote no secret in time");
            return FALSE;
        }
        guint8 spill;
        guint8 *into = total < capacity ? buffer + total : &spill;
        ssize_t got = read (fd, into, total < capacity ? capacity - total : 1);
        if (got < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (got < 0) {
            g_set_error (error, G_IO_ERROR, g_io_error_from_errno (errno), "read: %s", g_strerror (errno));
            return FALSE;
        }
        if (got == 0)
            break;
        if (into == &spill) {
            explicit_bzero (&spill, 1);
            g_set_error_literal (error, G_IO_ERROR, G_IO_ERROR_NO_SPACE,
                                 "the Secret portal wrote a longer secret than expected");
            return FALSE;
        }
        total += (gsize) got;
    }
    *length = total;
    return TRUE;
}

gboolean
sd_portal_retrieve_secret (gint timeout_ms, guint8 *buffer, gsize capacity, gsize *length,
                           guint32 *response, GError **error)
{
    gint64 deadline = g_get_monotonic_time () + (gint64) timeout_ms * 1000;
    *response = 0;
    *length = 0;

    /* A private main context: the Response signal is delivered here, on this thread. */
    GMainContext *context = g_main_context_new ();
    g_main_context_push_thread_default (context);
    gboolean ok = FALSE;
    GDBusConnection *connection = NULL;
    guint subscription = 0;
    int fds[2] = { -1, -1 };
    gchar *sender = NULL, *token = NULL, *request_path = NULL;
    PortalWait wait = { 0 };

    connection = sd_session_bus_until (deadline, error);
    if (connection == NULL)
        goto out;

    sender = g_strdup (g_dbus_connection_get_unique_name (connection) + 1);
    g_strdelimit (sender, ".", '_');
    token = g_strdup_printf ("securedictionary%u", g_random_int ());
    request_path = g_strconcat ("/org/freedesktop/portal/desktop/request/", sender, "/", token, NULL);

    if (!g_unix_open_pipe (fds, FD_CLOEXEC, error))
        goto out;
    GUnixFDList *fd_list = g_unix_fd_list_new ();
    gint index = g_unix_fd_list_append (fd_list, fds[1], error);
    close (fds[1]);
    fds[1] = -1;
    if (index < 0) {
        g_object_unref (fd_list);
        goto out;
    }

    /* Subscribed before the call, on the request path the portal will use, so an answer
       that comes at once is not missed. The portal sends it to this connection only. */
    subscription = g_dbus_connection_signal_subscribe (
        connection, PORTAL_BUS_NAME, "org.freedesktop.portal.Request", "Response", request_path, NULL,
        G_DBUS_SIGNAL_FLAGS_NO_MATCH_RULE, on_response, &wait, NULL);

    GVariantBuilder options;
    g_variant_builder_init (&options, G_VARIANT_TYPE_VARDICT);
    g_variant_builder_add (&options, "{sv}", "handle_token", g_variant_new_string (token));
    /* Auto-start allowed: on a desktop, xdg-desktop-portal is often D-Bus activated on
       first use. */
    GVariant *reply = g_dbus_connection_call_with_unix_fd_list_sync (
        connection, PORTAL_BUS_NAME, "/org/freedesktop/portal/desktop", "org.freedesktop.portal.Secret", "RetrieveSecret",
        g_variant_new ("(h@a{sv})", index, g_variant_builder_end (&options)), G_VARIANT_TYPE ("(o)"),
        G_DBUS_CALL_FLAGS_NONE, MAX (sd_remaining_ms (deadline), 1), fd_list, NULL, NULL, error);
    g_object_unref (fd_list);
    if (reply == NULL)
        goto out;
    g_variant_unref (reply);

    if (!sd_iterate_until (context, &wait.answered, deadline)) {
        g_set_error_literal (error, G_IO_ERROR, G_IO_ERROR_TIMED_OUT, "the Secret portal did not answer in time");
        goto out;
    }
    if (wait.response != 0) {
        *response = wait.response;
        goto out;
    }
    ok = read_secret (fds[0], deadline, buffer, capacity, length, error);

out:
    if (subscription != 0)
        g_dbus_connection_signal_unsubscribe (connection, subscription);
    if (fds[0] >= 0)
        close (fds[0]);
    g_free (request_path);
    g_free (token);
    g_free (sender);
    g_clear_object (&connection);
    g_main_context_pop_thread_default (context);
    g_main_context_unref (context);
    return ok;
}
