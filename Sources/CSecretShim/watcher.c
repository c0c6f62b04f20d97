/* Watching the Secret Service's collections for changes, on a thread of its own. */
#include "internal.h"

/* ---- watching collections for item changes -------------------------------------- */

struct SdWatcher {
    GThread *thread;
    GMainContext *context;
    GMainLoop *loop;
    GDBusConnection *bus;
    SdChangeCallback callback;
    void *user_data;
    GMutex started_lock;
    GCond started;
    gboolean ready;
    gboolean detached;   /* stopped from its own thread: the thread frees the watcher */
};

static void
watcher_free (SdWatcher *watcher)
{
    g_main_loop_unref (watcher->loop);
    g_main_context_unref (watcher->context);
    g_object_unref (watcher->bus);
    g_mutex_clear (&watcher->started_lock);
    g_cond_clear (&watcher->started);
    g_free (watcher);
}

static void
on_collection_signal (GDBusConnection *bus, const char *sender, const char *path, const char *interface,
                      const char *signal, GVariant *parameters, gpointer data)
{
    SdWatcher *watcher = data;
    if (g_strcmp0 (signal, "ItemCreated") == 0 || g_strcmp0 (signal, "ItemChanged") == 0 ||
        g_strcmp0 (signal, "ItemDeleted") == 0)
        watcher->callback (SD_CHANGE_ITEMS, watcher->user_data);
}

static void
on_service_signal (GDBusConnection *bus, const char *sender, const char *path, const char *interface,
                   const char *signal, GVariant *parameters, gpointer data)
{
    SdWatcher *watcher = data;
    /* Locking and unlocking a collection changes its properties: gnome-keyring says so with
       CollectionChanged, other providers may only with PropertiesChanged. */
    if (g_strcmp0 (signal, "CollectionChanged") == 0 || g_strcmp0 (signal, "CollectionCreated") == 0 ||
        g_strcmp0 (signal, "CollectionDeleted") == 0 || g_strcmp0 (signal, "PropertiesChanged") == 0)
        watcher->callback (SD_CHANGE_COLLECTIONS, watcher->user_data);
}

static gpointer
watcher_main (gpointer data)
{
    SdWatcher *watcher = data;
    g_main_context_push_thread_default (watcher->context);
    guint subscription = g_dbus_connection_signal_subscribe (
        watcher->bus, NULL, "org.freedesktop.Secret.Collection", NULL, NULL, NULL,
        G_DBUS_SIGNAL_FLAGS_NONE, on_collection_signal, watcher, NULL);
    guint service_subscription = g_dbus_connection_signal_subscribe (
        watcher->bus, NULL, "org.freedesktop.Secret.Service", NULL, NULL, NULL,
        G_DBUS_SIGNAL_FLAGS_NONE, on_service_signal, watcher, NULL);
    guint properties_subscription = g_dbus_connection_signal_subscribe (
        watcher->bus, NULL, "org.freedesktop.DBus.Properties", "PropertiesChanged", NULL,
        "org.freedesktop.Secret.Collection", G_DBUS_SIGNAL_FLAGS_NONE, on_service_signal, watcher, NULL);
    g_mutex_lock (&watcher->started_lock);
    watcher->ready = TRUE;
    g_cond_signal (&watcher->started);
    g_mutex_unlock (&watcher->started_lock);
    g_main_loop_run (watcher->loop);
    g_dbus_connection_signal_unsubscribe (watcher->bus, subscription);
    g_dbus_connection_signal_unsubscribe (watcher->bus, service_subscription);
    g_dbus_connection_signal_unsubscribe (watcher->bus, properties_subscription);
    while (g_main_context_iteration (watcher->context, FALSE))
        ;
    g_main_context_pop_thread_default (watcher->context);
    if (watcher->detached) {
        g_thread_unref (watcher->thread);
        watcher_free (watcher);
    }
    return NULL;
}

SdWatcher *
sd_watcher_start (SdChangeCallback callback, void *user_data, GError **error)
{
    GDBusConnection *bus = sd_session_bus (error);
    if (bus == NULL)
        return NULL;
    SdWatcher *watcher = g_new0 (SdWatcher, 1);
    watcher->bus = bus;
    watcher->callback = callback;
    watcher->user_data = user_data;
    watcher->context = g_main_context_new ();
    watcher->loop = g_main_loop_new (watcher->context, FALSE);
    g_mutex_init (&watcher->started_lock);
    g_cond_init (&watcher->started);
    watcher->thread = g_thread_new ("SecureDictionary.watcher", watcher_main, watcher);
    /* Return once the subscription exists: a change made after this call is seen. */
    g_mutex_lock (&watcher->started_lock);
    while (!watcher->ready)
        g_cond_wait (&watcher->started, &watcher->started_lock);
    g_mutex_unlock (&watcher->started_lock);
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
    if (g_thread_self () == watcher->thread) {
        /* Stopped from its own callback: it cannot wait for itself. The loop ends when the
           callback returns, and the thread then frees the watcher. */
        watcher->detached = TRUE;
        g_main_loop_quit (watcher->loop);
        return;
    }
    g_main_context_invoke (watcher->context, quit_loop, watcher->loop);
    g_thread_join (watcher->thread);
    watcher_free (watcher);
}
