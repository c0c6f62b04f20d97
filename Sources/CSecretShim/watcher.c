/* Watching the Secret Service's collections for changes, on a thread of its own. */
#include "internal.h"

struct SdWatcher {
    GThread *thread;
    GMainContext *context;
    GMainLoop *loop;
    GDBusConnection *bus;     /* once the watcher's thread has it */
    SdChangeCallback callback;
    void *user_data;
    GMutex started_lock;      /* guards the three flags below and failure */
    GCond started;
    gboolean ready;           /* subscribed */
    gboolean waiting;         /* the bus did not answer at once: subscribed once it does */
    gboolean stopping;
    GError *failure;          /* no session bus: the thread ended */
    gboolean detached;        /* stopped from its own thread, which alone sets and reads it, then frees the watcher */
};

/* How long the watcher's thread waits for the bus at a time, between looks at `stopping`. */
#define BUS_WAIT_SLICE_US (100 * G_TIME_SPAN_MILLISECOND)

static void
watcher_free (SdWatcher *watcher)
{
    g_main_loop_unref (watcher->loop);
    g_main_context_unref (watcher->context);
    g_clear_object (&watcher->bus);
    g_clear_error (&watcher->failure);
    g_mutex_clear (&watcher->started_lock);
    g_cond_clear (&watcher->started);
    g_free (watcher);
}

/* The session bus, waited for in slices (the bus may be frozen) until it answers, or NULL
   when there is none (watcher->failure set) or the watcher is stopped meanwhile. */
static GDBusConnection *
wait_for_bus (SdWatcher *watcher)
{
    while (TRUE) {
        GError *error = NULL;
        GDBusConnection *bus = sd_session_bus_until (g_get_monotonic_time () + BUS_WAIT_SLICE_US, &error);
        if (bus != NULL)
            return bus;
        g_mutex_lock (&watcher->started_lock);
        gboolean stopping = watcher->stopping;
        if (!g_error_matches (error, G_IO_ERROR, G_IO_ERROR_TIMED_OUT)) {
            watcher->failure = error;
            error = NULL;
        } else {
            watcher->waiting = TRUE;
        }
        g_cond_signal (&watcher->started);
        gboolean failed = watcher->failure != NULL;
        g_mutex_unlock (&watcher->started_lock);
        g_clear_error (&error);
        if (failed || stopping)
            return NULL;
    }
}

/* A signal of a collection (its items) or of the service (its collections). */
static void
on_signal (GDBusConnection *bus, const char *sender, const char *path, const char *interface,
           const char *signal, GVariant *parameters, gpointer data)
{
    SdWatcher *watcher = data;
    if (g_strcmp0 (signal, "ItemCreated") == 0 || g_strcmp0 (signal, "ItemChanged") == 0 ||
        g_strcmp0 (signal, "ItemDeleted") == 0)
        watcher->callback (SD_CHANGE_ITEMS, watcher->user_data);
    /* Locking and unlocking a collection changes its properties: gnome-keyring says so with
       CollectionChanged, other providers may only with PropertiesChanged. */
    else if (g_strcmp0 (signal, "CollectionChanged") == 0 || g_strcmp0 (signal, "CollectionCreated") == 0 ||
             g_strcmp0 (signal, "CollectionDeleted") == 0 || g_strcmp0 (signal, "PropertiesChanged") == 0)
        watcher->callback (SD_CHANGE_COLLECTIONS, watcher->user_data);
}

static gpointer
watcher_main (gpointer data)
{
    SdWatcher *watcher = data;
    watcher->bus = wait_for_bus (watcher);
    if (watcher->bus == NULL)
        goto out;
    gboolean late = watcher->waiting;
    g_main_context_push_thread_default (watcher->context);
    guint subscription = g_dbus_connection_signal_subscribe (
        watcher->bus, NULL, "org.freedesktop.Secret.Collection", NULL, NULL, NULL,
        G_DBUS_SIGNAL_FLAGS_NONE, on_signal, watcher, NULL);
    guint service_subscription = g_dbus_connection_signal_subscribe (
        watcher->bus, NULL, "org.freedesktop.Secret.Service", NULL, NULL, NULL,
        G_DBUS_SIGNAL_FLAGS_NONE, on_signal, watcher, NULL);
    guint properties_subscription = g_dbus_connection_signal_subscribe (
        watcher->bus, NULL, "org.freedesktop.DBus.Properties", "PropertiesChanged", NULL,
        "org.freedesktop.Secret.Collection", G_DBUS_SIGNAL_FLAGS_NONE, on_signal, watcher, NULL);
    g_mutex_lock (&watcher->started_lock);
    watcher->ready = TRUE;
    g_cond_signal (&watcher->started);
    g_mutex_unlock (&watcher->started_lock);
    /* Subscribed late: whatever changed before is looked at once. */
    if (late) {
        watcher->callback (SD_CHANGE_ITEMS, watcher->user_data);
        watcher->callback (SD_CHANGE_COLLECTIONS, watcher->user_data);
    }
    g_main_loop_run (watcher->loop);
    g_dbus_connection_signal_unsubscribe (watcher->bus, subscription);
    g_dbus_connection_signal_unsubscribe (watcher->bus, service_subscription);
    g_dbus_connection_signal_unsubscribe (watcher->bus, properties_subscription);
    while (g_main_context_iteration (watcher->context, FALSE))
        ;
    g_main_context_pop_thread_default (watcher->context);
out:
    if (watcher->detached) {
        g_thread_unref (watcher->thread);
        watcher_free (watcher);
    }
    return NULL;
}

SdWatcher *
sd_watcher_start (SdChangeCallback callback, void *user_data, GError **error)
{
    SdWatcher *watcher = g_new0 (SdWatcher, 1);
    watcher->callback = callback;
    watcher->user_data = user_data;
    watcher->context = g_main_context_new ();
    watcher->loop = g_main_loop_new (watcher->context, FALSE);
    g_mutex_init (&watcher->started_lock);
    g_cond_init (&watcher->started);
    watcher->thread = g_thread_new ("SecureDictionary.watcher", watcher_main, watcher);
    /* Subscribed before returning (unless the bus is frozen), so a change made after this call is seen. */
    g_mutex_lock (&watcher->started_lock);
    while (!watcher->ready && !watcher->waiting && watcher->failure == NULL)
        g_cond_wait (&watcher->started, &watcher->started_lock);
    gboolean failed = watcher->failure != NULL;
    g_mutex_unlock (&watcher->started_lock);
    if (failed) {
        g_propagate_error (error, g_error_copy (watcher->failure));
        g_thread_join (watcher->thread);
        watcher_free (watcher);
        return NULL;
    }
    return watcher;
}

static gboolean
quit_loop (gpointer loop)
{
    g_main_loop_quit (loop);
    return G_SOURCE_REMOVE;
}

void
sd_watcher_stop (SdWatcher *watcher)
{
    g_mutex_lock (&watcher->started_lock);
    watcher->stopping = TRUE;
    g_mutex_unlock (&watcher->started_lock);
    /* Quits the loop as soon as it runs (it may not have started yet). */
    GSource *quit = g_idle_source_new ();
    g_source_set_callback (quit, quit_loop, watcher->loop, NULL);
    g_source_attach (quit, watcher->context);
    g_source_unref (quit);
    if (g_thread_self () == watcher->thread) {
        /* Stopped from its own callback: it cannot wait for itself. The loop ends when the
           callback returns, and the thread then frees the watcher. */
        watcher->detached = TRUE;
        return;
    }
    g_thread_join (watcher->thread);
    watcher_free (watcher);
}
