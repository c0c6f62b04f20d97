/* The cross-process writer lock of one item: a well-known name on the session bus. Every
   wait here is in a main context of its own and ends by a deadline on GLib's monotonic
   clock (microseconds), which the caller gives. */
#include "internal.h"

static void
on_name_acquired (GDBusConnection *bus, const char *sender, const char *path,
                  const char *interface, const char *signal, GVariant *parameters, gpointer flag)
{
    *(gboolean *) flag = TRUE;
}

struct SdNameRequest {
    GDBusConnection *bus;
    GMainContext *context;
    char *name;
    guint subscription;
    GCancellable *cancellable;
    gboolean answered;       /* the RequestName reply (or its error) has arrived */
    guint32 code;
    GError *error;
    gboolean acquired;       /* a NameAcquired for name arrived after the answer */
};

static void
on_request_answered (GObject *source, GAsyncResult *result, gpointer data)
{
    SdNameRequest *request = data;
    GVariant *reply = g_dbus_connection_call_finish (G_DBUS_CONNECTION (source), result, &request->error);
    if (reply != NULL) {
        g_variant_get (reply, "(u)", &request->code);
        g_variant_unref (reply);
    }
    /* The NameAcquired that grants a queued request comes after its IN_QUEUE answer. One
       that came before is from a grant at once, or from an abandoned earlier request whose
       grant crossed its release: never counted. (Were GLib ever to deliver the two out of
       order, a queued request would wait to its deadline: a timeout, never two holders.) */
    request->acquired = FALSE;
    request->answered = TRUE;
}

SdNameRequest *
sd_bus_name_request (const char *name, gint64 deadline_us, GError **error)
{
    GDBusConnection *bus = sd_session_bus_until (deadline_us, error);
    if (bus == NULL)
        return NULL;
    SdNameRequest *request = g_new0 (SdNameRequest, 1);
    request->bus = bus;
    request->context = g_main_context_new ();
    request->name = g_strdup (name);
    request->cancellable = g_cancellable_new ();
    g_main_context_push_thread_default (request->context);
    /* Subscribed before asking, so the NameAcquired of a queued request cannot be missed.
       The bus sends NameAcquired to this connection alone, which needs no match rule. */
    request->subscription = g_dbus_connection_signal_subscribe (
        bus, "org.freedesktop.DBus", "org.freedesktop.DBus", "NameAcquired", "/org/freedesktop/DBus",
        name, G_DBUS_SIGNAL_FLAGS_NO_MATCH_RULE, on_name_acquired, &request->acquired, NULL);
    /* Flags 0: no replacing, and queue behind the owner (dbus-daemon serves the queue in
       order). Sent now, in order with every later message of this process on the bus. */
    g_dbus_connection_call (bus, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                            "RequestName", g_variant_new ("(su)", name, 0u), G_VARIANT_TYPE ("(u)"),
                            G_DBUS_CALL_FLAGS_NONE, -1, request->cancellable, on_request_answered, request);
    g_main_context_pop_thread_default (request->context);
    return request;
}

static void
release_name (GDBusConnection *bus, const char *name)
{
    /* Sent without awaiting the reply: the bus serves the next in line when it reads the
       message, and a later RequestName of this process goes out after it on the same
       connection, so it cannot overtake the release. */
    g_dbus_connection_call (bus, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                            "ReleaseName", g_variant_new ("(s)", name), NULL, G_DBUS_CALL_FLAGS_NONE, -1,
                            NULL, NULL, NULL);
}

static void
request_free (SdNameRequest *request)
{
    /* The reply callback runs in request->context: wait for it (cancelled, it comes at once). */
    g_cancellable_cancel (request->cancellable);
    while (!request->answered)
        g_main_context_iteration (request->context, TRUE);
    g_dbus_connection_signal_unsubscribe (request->bus, request->subscription);
    /* Run what the unsubscription left queued before the context goes. */
    while (g_main_context_iteration (request->context, FALSE))
        ;
    g_clear_error (&request->error);
    g_object_unref (request->cancellable);
    g_main_context_unref (request->context);
    g_free (request->name);
    g_object_unref (request->bus);
    g_free (request);
}

int
sd_bus_name_request_finish (SdNameRequest *request, gint64 answer_deadline_us, gint64 wait_deadline_us,
                            GDBusConnection **held, GError **error)
{
    int result = -1;
    if (!sd_iterate_until (request->context, &request->answered, answer_deadline_us)) {
        result = 0;
    } else if (request->error != NULL) {
        g_propagate_error (error, request->error);
        request->error = NULL;
    } else if (request->code == 1 || request->code == 4) {   /* PRIMARY_OWNER, ALREADY_OWNER */
        result = 1;
    } else if (request->code == 2) {                          /* IN_QUEUE: wait for NameAcquired */
        result = sd_iterate_until (request->context, &request->acquired, wait_deadline_us) ? 1 : 0;
    } else {
        g_set_error (error, G_DBUS_ERROR, G_DBUS_ERROR_FAILED, "RequestName answered %u", request->code);
    }
    /* The name lives as long as the connection that owns it: keep that connection until the
       name is given back, even if everything else in the process lets go of it. */
    *held = result == 1 ? g_object_ref (request->bus) : NULL;
    /* A deadline passed: leave the queue, or give back a name granted meanwhile (sent after
       RequestName on the same connection, so the bus reads it after). */
    if (result == 0)
        release_name (request->bus, request->name);
    request_free (request);
    return result;
}

void
sd_bus_name_unlock (GDBusConnection *held, const char *name)
{
    release_name (held, name);
    g_object_unref (held);
}
