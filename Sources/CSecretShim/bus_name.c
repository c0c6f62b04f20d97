/* The cross-process writer lock of one item: a well-known name, waited for in a main
   context of its own. */
#include "internal.h"

struct SdNameRequest {
    GDBusConnection *bus;
    GMainContext *context;
    char *name;
    guint subscription;
    GCancellable *cancellable;
    SdPendingCall answer;    /* RequestName's */
    gboolean acquired;       /* a NameAcquired for name arrived after the answer */
};

static void
on_name_acquired (GDBusConnection *bus, const char *sender, const char *path,
                  const char *interface, const char *signal, GVariant *parameters, gpointer data)
{
    SdNameRequest *request = data;
    /* A queued request's grant comes after its IN_QUEUE answer; one before is from a grant at
       once, or an abandoned request's grant that crossed its release: never counted. (Were
       GLib to deliver them out of order, the request would time out: never two holders.) */
    if (request->answer.done)
        request->acquired = TRUE;
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
    /* Subscribed before asking, so a queued request's NameAcquired is not missed (the bus
       sends it to this connection alone: no match rule). */
    request->subscription = g_dbus_connection_signal_subscribe (
        bus, "org.freedesktop.DBus", "org.freedesktop.DBus", "NameAcquired", "/org/freedesktop/DBus",
        name, G_DBUS_SIGNAL_FLAGS_NO_MATCH_RULE, on_name_acquired, request, NULL);
    /* Flags 0: no replacing, queue behind the owner (served in order). Sent now, before every
       later message of this process on the bus. */
    sd_call_bus (bus, "RequestName", g_variant_new ("(su)", name, 0u), "(u)", request->cancellable, &request->answer);
    g_main_context_pop_thread_default (request->context);
    return request;
}

static void
release_name (GDBusConnection *bus, const char *name)
{
    /* The reply is not awaited: the bus serves the next in line when it reads this, and a
       later RequestName of this process follows it on the same connection. */
    g_dbus_connection_call (bus, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                            "ReleaseName", g_variant_new ("(s)", name), NULL, G_DBUS_CALL_FLAGS_NONE, -1,
                            NULL, NULL, NULL);
}

static void
request_free (SdNameRequest *request)
{
    sd_end_call (request->context, &request->answer, request->cancellable);
    g_dbus_connection_signal_unsubscribe (request->bus, request->subscription);
    /* Run what the unsubscription left queued before the context goes. */
    while (g_main_context_iteration (request->context, FALSE))
        ;
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
    guint32 code = 0;
    gboolean answered = sd_iterate_until (request->context, &request->answer.done, answer_deadline_us);
    if (request->answer.reply != NULL)
        g_variant_get (request->answer.reply, "(u)", &code);
    if (!answered) {
        result = 0;
    } else if (request->answer.error != NULL) {
        g_propagate_error (error, g_steal_pointer (&request->answer.error));
    } else if (code == 1 || code == 4) {                      /* PRIMARY_OWNER, ALREADY_OWNER */
        result = 1;
    } else if (code == 2) {                                   /* IN_QUEUE: wait for NameAcquired */
        result = sd_iterate_until (request->context, &request->acquired, wait_deadline_us) ? 1 : 0;
    } else {
        g_set_error (error, G_DBUS_ERROR, G_DBUS_ERROR_FAILED, "RequestName answered %u", code);
    }
    /* The name lives as long as its connection: kept until the name is given back. */
    *held = result == 1 ? g_object_ref (request->bus) : NULL;
    /* A deadline passed: leave the queue, or give back a name granted meanwhile. */
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
