#ifndef CSECRETPORTAL_H
#define CSECRETPORTAL_H
/* The C of the encrypted-file store's Secret portal key source: the Secret portal call,
   which waits for the portal's Response signal in a GLib main context of its own. GIO only, no
   libsecret; the session bus connection is the core's (CSecretShim's sd_session_bus_until),
   so that the portal call too waits for the bus no longer than its deadline. */
#include <gio/gio.h>

/* Asks xdg-desktop-portal's Secret portal (org.freedesktop.portal.Secret.RetrieveSecret)
   for this sandboxed app's master secret, on the session bus, within timeout_ms in all.
   On success returns TRUE with the secret's bytes in buffer[0 .. *length) (at most
   capacity; the portal writes them into a pipe, read until it closes). Returns FALSE
   with *response set to the portal's non-zero answer (1: the user cancelled, 2: it
   failed), or with *response 0 and error set (no portal, a bus error, G_IO_ERROR_TIMED_OUT,
   G_IO_ERROR_NO_SPACE when more than capacity bytes came). */
gboolean sd_portal_retrieve_secret(gint timeout_ms, guint8 *buffer, gsize capacity, gsize *length,
                                   guint32 *response, GError **error);

#endif
