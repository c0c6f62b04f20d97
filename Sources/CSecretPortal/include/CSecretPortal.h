#ifndef CSECRETPORTAL_H
#define CSECRETPORTAL_H
/* The Secret portal call of the encrypted-file stores, which waits for the portal's Response
   in a main context of its own. GIO only; the bus connection is CSecretShim's
   (sd_session_bus_until), so this call too waits for the bus no longer than its deadline. */
#include <gio/gio.h>

/* Asks xdg-desktop-portal (org.freedesktop.portal.Secret.RetrieveSecret) for this sandboxed
   app's master secret, within timeout_ms in all: TRUE with the secret's bytes in
   buffer[0 .. *length) (at most capacity, read from the pipe the portal writes into); FALSE with
   *response the portal's non-zero answer (1: the user cancelled, 2: it failed), or with
   *response 0 and error set (no portal, a bus error, G_IO_ERROR_TIMED_OUT, G_IO_ERROR_NO_SPACE
   when more than capacity bytes came). */
gboolean sd_portal_retrieve_secret(gint timeout_ms, guint8 *buffer, gsize capacity, gsize *length,
                                   guint32 *response, GError **error);

#endif
