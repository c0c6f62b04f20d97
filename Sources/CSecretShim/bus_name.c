/* The cross-process writer lock of one item: a well-known name, waited for in a main
   context of its own. */
#include "internal.h"

typedef struct {
    SdPendingCall answer;    /* RequestName's */
    gboolean acquired;       /* a NameAcquired for the name arrived after the answer */
} NameRequest;

static void
on_name_acquired (GDBusConnection *bus, const char *sender, const char *path,
                  const char *interface, const char *signal, GVariant *parameters, gpointer data)
{
    NameRequest *request = data;
    /* A queued request's grant comes after its IN_QUEUE answer; one before is from a grant at
       once, or an abandoned request's grant that crossed its release: never counted. (Were
       GLib to deliver them out of order, the request would time out: never two holders.) */
    if (request->answer.done)
        request->acquired = TRUE;
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

int
sd_bus_name_lock (const char *name, gint64 deadline_us, gint64 answer_deadline_us, gint64 wait_deadline_us,
                  GDBusConnection **held, GError **error)
{
    *held = NULL;
    GDBusConnection *bus = sd_session_bus_until (deadline_us, error);
    if (bus == NULL)
        return -1;
    GMainContext *context = g_main_context_new ();
    GCancellable *cancellable = g_cancellable_new ();
    NameRequest request = { { FALSE, NULL, NULL }, FALSE };
    g_main_context_push_thread_default (context);
    /* Subscribed before asking, so a queued request's NameAcquired is not missed (the bus
       sends it to this connection alone: no match rule). */
    guint subscription = g_dbus_connection_signal_subscribe (
        bus, "org.freedesktop.DBus", "org.freedesktop.DBus", "NameAcquired", "/org/freedesktop/DBus",
        name, G_DBUS_SIGNAL_FLAGS_NO_MATCH_RULE, on_name_acquired, &request, NULL);
    /* Flags 0: no replacing, queue behind the owner (served in order). */
    sd_call_bus (bus, "RequestName", g_variant_new ("(su)", name, 0u), "(u)", cancellable, &request.answer);
    int result = -1;
    guint32 code = 0;
    gboolean answered = sd_iterate_until (context, &request.answer.done, answer_deadline_us);
    if (request.answer.reply != NULL)
        g_variant_get (request.answer.reply, "(u)", &code);
    if (!answered) {
        result = 0;
    } else if (request.answer.error != NULL) {
        g_propagate_error (error, g_steal_pointer (&request.answer.error));
    } else if (code == 1 || code == 4) {                      /* PRIMARY_OWNER, ALREADY_OWNER */
        result = 1;
    } else if (code == 2) {                                   /* IN_QUEUE: wait for NameAcquired */
        result = sd_iterate_until (context, &request.acquired, wait_deadline_us) ? 1 : 0;
    } else {
        g_set_error (error, G_DBUS_ERROR, G_DBUS_ERROR_FAILED, "RequestName answered %u", code);
    }
    /* The name lives as long as its connection: kept until the name is given back. */
    if (result == 1)
        *held = g_object_ref (bus);
    /* A deadline passed: leave the queue, or give back a name granted meanwhile. */
    if (result == 0)
        release_name (bus, name);
    sd_end_call (context, &request.answer, cancellable);
    g_dbus_connection_signal_unsubscribe (bus, subscription);
    /* Run what the unsubscription left queued before the context goes. */
    while (g_main_context_iteration (context, FALSE))
        ;
    g_main_context_pop_thread_default (context);
    g_main_context_unref (context);
    g_object_unref (cancellable);
    g_object_unref (bus);
    return result;
}

void
sd_bus_name_unlock (GDBusConnection *held, const char *name)
{
    release_name (held, name);
    g_object_unref (held);
}
