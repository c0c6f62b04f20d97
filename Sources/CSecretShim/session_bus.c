/* The session bus connection every part of the shim uses, and questions to the bus. */
#include "internal.h"

/* g_bus_get_sync's handshake waits without end for a bus that does not answer (measured: 9 s
   of a 10 s SIGSTOP of dbus-daemon), and a second caller waits on the first one's lock. So it
   runs on a thread of its own, never cancelled (the shared connection would keep the
   cancellation as its failure), and the connection is kept until it closes: one given up by
   its last user (a call stopped at its deadline) had to be made again, on a silent bus. */
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

/* ---- waiting within a deadline ---------------------------------------------------- */

static gboolean
on_deadline (gpointer flag)
{
    *(gboolean *) flag = TRUE;
    return G_SOURCE_REMOVE;
}

gint
sd_remaining_ms (gint64 deadline_us)
{
    gint64 left = deadline_us - g_get_monotonic_time ();
    return left <= 0 ? 0 : (gint) MIN ((left + 999) / 1000, G_MAXINT);
}

gboolean
sd_iterate_until (GMainContext *context, const gboolean *done, gint64 deadline_us)
{
    gboolean expired = FALSE;
    GSource *timer = g_timeout_source_new (sd_remaining_ms (deadline_us));
    g_source_set_callback (timer, on_deadline, &expired, NULL);
    g_source_attach (timer, context);
    while (!*done && !expired)
        g_main_context_iteration (context, TRUE);
    g_source_destroy (timer);
    g_source_unref (timer);
    return *done;
}

void
sd_end_call (GMainContext *context, SdPendingCall *call, GCancellable *cancellable)
{
    if (!call->done)
        g_cancellable_cancel (cancellable);
    while (!call->done)
        g_main_context_iteration (context, TRUE);
    g_clear_pointer (&call->reply, g_variant_unref);
    g_clear_error (&call->error);
}

void
sd_call_bus (GDBusConnection *bus, const char *method, GVariant *parameters, const char *reply_type,
             GCancellable *cancellable, SdPendingCall *call)
{
    g_dbus_connection_call (bus, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", method,
                            parameters, G_VARIANT_TYPE (reply_type), G_DBUS_CALL_FLAGS_NONE, -1, cancellable,
                            sd_pending_call_answered, call);
}

/* ---- who owns a name ---------------------------------------------------------------- */

/* What each question to the bus below starts with: the bus, a main context of its own (the
   thread's default meanwhile) and a cancellable for its calls. */
typedef struct {
    GDBusConnection *bus;
    GMainContext *context;
    GCancellable *cancellable;
} BusScope;

static gboolean
bus_scope_open (BusScope *scope, gint64 deadline_us, GError **error)
{
    scope->bus = sd_session_bus_until (deadline_us, error);
    if (scope->bus == NULL)
        return FALSE;
    scope->context = g_main_context_new ();
    g_main_context_push_thread_default (scope->context);
    scope->cancellable = g_cancellable_new ();
    return TRUE;
}

static void
bus_scope_close (BusScope *scope)
{
    g_object_unref (scope->cancellable);
    g_main_context_pop_thread_default (scope->context);
    g_main_context_unref (scope->context);
    g_object_unref (scope->bus);
}

int
sd_bus_name_presence (const char *name, gint64 deadline_us, GError **error)
{
    BusScope scope;
    if (!bus_scope_open (&scope, deadline_us, error))
        return -1;
    /* Both questions go out before the first answer is awaited: one round trip. */
    SdPendingCall owned = { FALSE, NULL, NULL }, activatable = { FALSE, NULL, NULL };
    sd_call_bus (scope.bus, "NameHasOwner", g_variant_new ("(s)", name), "(b)", scope.cancellable, &owned);
    sd_call_bus (scope.bus, "ListActivatableNames", NULL, "(as)", scope.cancellable, &activatable);
    int result = -1;
    if (!sd_iterate_until (scope.context, &owned.done, deadline_us) ||
        !sd_iterate_until (scope.context, &activatable.done, deadline_us)) {
        g_set_error_literal (error, G_IO_ERROR, G_IO_ERROR_TIMED_OUT, "the session bus did not answer in time");
    } else if (owned.error != NULL || activatable.error != NULL) {
        g_propagate_error (error, g_error_copy (owned.error != NULL ? owned.error : activatable.error));
    } else {
        gboolean has_owner = FALSE;
        const gchar **names = NULL;
        g_variant_get (owned.reply, "(b)", &has_owner);
        g_variant_get (activatable.reply, "(^a&s)", &names);
        result = has_owner ? 2 : g_strv_contains (names, name) ? 1 : 0;
        g_free (names);
    }
    sd_end_call (scope.context, &owned, scope.cancellable);
    sd_end_call (scope.context, &activatable, scope.cancellable);
    bus_scope_close (&scope);
    return result;
}

static void
on_owner_changed (GDBusConnection *bus, const char *sender, const char *path, const char *interface,
                  const char *signal, GVariant *parameters, gpointer owned)
{
    const char *name = NULL, *old_owner = NULL, *new_owner = NULL;
    if (g_variant_is_of_type (parameters, G_VARIANT_TYPE ("(sss)"))) {
        g_variant_get (parameters, "(&s&s&s)", &name, &old_owner, &new_owner);
        if (new_owner[0] != '\0')
            *(gboolean *) owned = TRUE;
    }
}

int
sd_bus_name_await_owner (const char *name, gboolean start, gint64 deadline_us, GError **error)
{
    BusScope scope;
    if (!bus_scope_open (&scope, deadline_us, error))
        return -1;
    gboolean owned = FALSE;
    /* Subscribed first: its AddMatch reaches the bus before the question below, so an owner
       that comes after the answer is announced. */
    guint subscription = g_dbus_connection_signal_subscribe (
        scope.bus, "org.freedesktop.DBus", "org.freedesktop.DBus", "NameOwnerChanged", "/org/freedesktop/DBus", name,
        G_DBUS_SIGNAL_FLAGS_NONE, on_owner_changed, &owned, NULL);
    SdPendingCall has_owner = { FALSE, NULL, NULL }, started = { TRUE, NULL, NULL };
    sd_call_bus (scope.bus, "NameHasOwner", g_variant_new ("(s)", name), "(b)", scope.cancellable, &has_owner);
    if (start) {
        started.done = FALSE;
        sd_call_bus (scope.bus, "StartServiceByName", g_variant_new ("(su)", name, 0u), "(u)", scope.cancellable, &started);
    }
    int result = 0;
    gboolean waiting = TRUE;
    while (result == 0) {
        gboolean has = FALSE;
        if (has_owner.reply != NULL)
            g_variant_get (has_owner.reply, "(b)", &has);
        GError *failure = has_owner.error != NULL ? has_owner.error : started.error;
        if (owned || has || started.reply != NULL) {   /* started, or running already: it owns the name now */
            result = 1;
        } else if (failure != NULL) {
            g_propagate_error (error, g_error_copy (failure));
            result = -1;
        } else if (waiting) {
            /* Until the next event: an answer not come yet, else an owner announced. */
            const gboolean *next = !has_owner.done ? &has_owner.done : !started.done ? &started.done : &owned;
            waiting = sd_iterate_until (scope.context, next, deadline_us);
        } else {
            break;
        }
    }
    if (result == 0 && !has_owner.done) {   /* "no owner" is an answer the bus did not give */
        g_set_error_literal (error, G_IO_ERROR, G_IO_ERROR_TIMED_OUT, "the session bus did not answer in time");
        result = -1;
    }
    sd_end_call (scope.context, &has_owner, scope.cancellable);
    sd_end_call (scope.context, &started, scope.cancellable);
    g_dbus_connection_signal_unsubscribe (scope.bus, subscription);
    while (g_main_context_iteration (scope.context, FALSE))
        ;
    bus_scope_close (&scope);
    return result;
}

gint64
sd_bus_name_owner_pid (const char *name, gint64 deadline_us)
{
    BusScope scope;
    if (!bus_scope_open (&scope, deadline_us, NULL))
        return -1;
    /* The bus takes a well-known name here too: one question, not GetNameOwner first. */
    SdPendingCall call = { FALSE, NULL, NULL };
    sd_call_bus (scope.bus, "GetConnectionUnixProcessID", g_variant_new ("(s)", name), "(u)", scope.cancellable, &call);
    guint32 pid = 0;
    if (sd_iterate_until (scope.context, &call.done, deadline_us) && call.reply != NULL)
        g_variant_get (call.reply, "(u)", &pid);
    sd_end_call (scope.context, &call, scope.cancellable);
    bus_scope_close (&scope);
    return pid > 0 ? (gint64) pid : -1;
}
