/* The Secret Service connection: how it is opened, its prompts, and which provider answers. */
#include "internal.h"

/* ---- a SecretService that prompts only to confirm, never to unlock ------------ */

typedef struct {
    SecretService parent;
    gboolean confirmations_allowed;   /* both set by sd_service_allow_confirmations */
    gboolean dismiss_on_cancel;
} SdNoPromptService;
typedef struct { SecretServiceClass parent_class; } SdNoPromptServiceClass;

G_DEFINE_TYPE (SdNoPromptService, sd_no_prompt_service, SECRET_TYPE_SERVICE)

G_DEFINE_QUARK (sd-prompt-error-quark, sd_prompt_error)

/* The flag a prompt sets on the call's cancellable: see sd_cancellable_new. */
static const char prompted_key[] = "sd-prompted";

GCancellable *
sd_cancellable_new (void)
{
    GCancellable *cancellable = g_cancellable_new ();
    g_object_set_data_full (G_OBJECT (cancellable), prompted_key, g_new0 (gint, 1), g_free);
    return cancellable;
}

gboolean
sd_cancellable_prompted (GCancellable *cancellable)
{
    gint *flag = g_object_get_data (G_OBJECT (cancellable), prompted_key);
    return flag != NULL && g_atomic_int_get (flag) != 0;
}

void
sd_service_allow_confirmations (SecretService *service, gboolean allowed, gboolean dismiss_on_cancel)
{
    ((SdNoPromptService *) service)->confirmations_allowed = allowed;
    ((SdNoPromptService *) service)->dismiss_on_cancel = dismiss_on_cancel;
}

/* One confirmation prompt in flight: Prompt.Prompt, then its Completed signal. Not
   libsecret's prompt code: it fails without an error when a prompt is dismissed (the caller
   would wait for the deadline), and cannot tell that it waits for a human. */
typedef struct {
    GDBusConnection *connection;
    char *name;
    char *path;
    GVariantType *return_type;
    guint subscription;
    gulong cancelled_handler;
    gboolean dismiss_on_cancel;
} ConfirmClosure;

static void
confirm_closure_free (gpointer data)
{
    ConfirmClosure *closure = data;
    g_object_unref (closure->connection);
    g_free (closure->name);
    g_free (closure->path);
    if (closure->return_type != NULL)
        g_variant_type_free (closure->return_type);
    g_free (closure);
}

/* Ends the task once: drops the subscription and the cancellation handler first. */
static void
confirm_finish (GTask *task, GVariant *result, GError *error)
{
    ConfirmClosure *closure = g_task_get_task_data (task);
    if (g_task_get_completed (task) || closure->subscription == 0)
        return;
    g_dbus_connection_signal_unsubscribe (closure->connection, closure->subscription);
    closure->subscription = 0;
    if (closure->cancelled_handler != 0)
        g_cancellable_disconnect (g_task_get_cancellable (task), closure->cancelled_handler);
    closure->cancelled_handler = 0;
    if (error != NULL)
        g_task_return_error (task, error);
    else
        g_task_return_pointer (task, result, (GDestroyNotify) g_variant_unref);
}

static void
on_confirm_completed (GDBusConnection *connection, const char *sender, const char *path,
                      const char *interface, const char *signal, GVariant *parameters, gpointer data)
{
    GTask *task = data;
    ConfirmClosure *closure = g_task_get_task_data (task);
    gboolean dismissed = TRUE;
    GVariant *result = NULL;
    if (g_variant_is_of_type (parameters, G_VARIANT_TYPE ("(bv)")))
        g_variant_get (parameters, "(bv)", &dismissed, &result);
    if (dismissed) {
        if (result != NULL)
            g_variant_unref (result);
        confirm_finish (task, NULL, g_error_new_literal (sd_prompt_error_quark (), SD_PROMPT_DISMISSED,
                                                         "the keyring's confirmation prompt was dismissed"));
    } else if (closure->return_type != NULL && !g_variant_is_of_type (result, closure->return_type)) {
        g_variant_unref (result);
        confirm_finish (task, NULL, g_error_new_literal (SECRET_ERROR, SECRET_ERROR_PROTOCOL,
                                                         "the keyring's prompt completed with a result of the wrong type"));
    } else {
        confirm_finish (task, result, NULL);
    }
}

static void
on_confirm_prompt_called (GObject *source, GAsyncResult *result, gpointer data)
{
    GTask *task = data;
    GError *error = NULL;
    GVariant *reply = g_dbus_connection_call_finish (G_DBUS_CONNECTION (source), result, &error);
    if (reply != NULL)
        g_variant_unref (reply);
    else
        confirm_finish (task, NULL, error);   /* no Completed will come */
    g_object_unref (task);
}

static gboolean
return_cancelled (gpointer data)
{
    GTask *task = data;
    confirm_finish (task, NULL, g_error_new_literal (G_IO_ERROR, G_IO_ERROR_CANCELLED, "cancelled"));
    return G_SOURCE_REMOVE;
}

static void
on_confirm_cancelled (GCancellable *cancellable, gpointer data)
{
    GTask *task = data;
    ConfirmClosure *closure = g_task_get_task_data (task);
    /* The deadline passed: dismiss the dialog if told to (ProviderTraits.dismissesPrompts),
       then end the task from its own context (this handler may run on another thread). */
    if (closure->dismiss_on_cancel)
        g_dbus_connection_call (closure->connection, closure->name, closure->path, "org.freedesktop.Secret.Prompt",
                                "Dismiss", NULL, NULL, G_DBUS_CALL_FLAGS_NO_AUTO_START, -1, NULL, NULL, NULL);
    GSource *idle = g_idle_source_new ();
    g_source_set_callback (idle, return_cancelled, g_object_ref (task), g_object_unref);
    g_source_attach (idle, g_task_get_context (task));
    g_source_unref (idle);
}

static void
confirm_async (SecretService *self, SecretPrompt *prompt, const GVariantType *return_type,
               GCancellable *cancellable, GAsyncReadyCallback callback, gpointer user_data)
{
    GDBusProxy *proxy = G_DBUS_PROXY (self);
    GTask *task = g_task_new (self, cancellable, callback, user_data);
    ConfirmClosure *closure = g_new0 (ConfirmClosure, 1);
    closure->connection = g_object_ref (g_dbus_proxy_get_connection (proxy));
    closure->name = g_strdup (g_dbus_proxy_get_name (proxy));
    closure->path = g_strdup (g_dbus_proxy_get_object_path (G_DBUS_PROXY (prompt)));
    closure->return_type = return_type != NULL ? g_variant_type_copy (return_type) : NULL;
    closure->dismiss_on_cancel = ((SdNoPromptService *) self)->dismiss_on_cancel;
    g_task_set_task_data (task, closure, confirm_closure_free);
    gint *prompted = cancellable != NULL ? g_object_get_data (G_OBJECT (cancellable), prompted_key) : NULL;
    if (prompted != NULL)
        g_atomic_int_set (prompted, 1);
    /* Subscribed before Prompt is called, so a Completed sent at once is not missed; the
       prompt's unique path alone picks its signals. */
    closure->subscription = g_dbus_connection_signal_subscribe (
        closure->connection, NULL, "org.freedesktop.Secret.Prompt", "Completed", closure->path, NULL,
        G_DBUS_SIGNAL_FLAGS_NONE, on_confirm_completed, g_object_ref (task), g_object_unref);
    if (cancellable != NULL)
        closure->cancelled_handler = g_cancellable_connect (cancellable, G_CALLBACK (on_confirm_cancelled),
                                                            g_object_ref (task), g_object_unref);
    if (closure->subscription != 0)
        g_dbus_connection_call (closure->connection, closure->name, closure->path, "org.freedesktop.Secret.Prompt",
                                "Prompt", g_variant_new ("(s)", ""), NULL, G_DBUS_CALL_FLAGS_NO_AUTO_START, -1,
                                NULL, on_confirm_prompt_called, g_object_ref (task));
    g_object_unref (task);
}

static void
no_prompt_async (SecretService *self, SecretPrompt *prompt, const GVariantType *return_type,
                 GCancellable *cancellable, GAsyncReadyCallback callback, gpointer user_data)
{
    if (((SdNoPromptService *) self)->confirmations_allowed) {
        confirm_async (self, prompt, return_type, cancellable, callback, user_data);
        return;
    }
    g_task_report_new_error (self, callback, user_data, no_prompt_async, SECRET_ERROR, SECRET_ERROR_IS_LOCKED,
                             "the keyring is locked and SecureDictionary does not show unlock prompts");
}

static GVariant *
no_prompt_finish (SecretService *self, GAsyncResult *result, GError **error)
{
    return g_task_propagate_pointer (G_TASK (result), error);
}

static void
sd_no_prompt_service_init (SdNoPromptService *self)
{
}

static void
sd_no_prompt_service_class_init (SdNoPromptServiceClass *klass)
{
    SecretServiceClass *service_class = SECRET_SERVICE_CLASS (klass);
    /* prompt_sync stays libsecret's: only secret_service_prompt_at_dbus_path_sync calls it, and
       nothing here does (libsecret's other *_sync calls run the async ones in a loop of their own). */
    service_class->prompt_async = no_prompt_async;
    service_class->prompt_finish = no_prompt_finish;
}

SecretService *
sd_service_open (gint64 deadline_us, gboolean open_session, GCancellable *cancellable, GError **error)
{
    /* libsecret asks GLib for the shared connection, which is then the ready one held here. */
    GDBusConnection *bus = sd_session_bus_until (deadline_us, error);
    if (bus == NULL)
        return NULL;
    SecretService *service = secret_service_open_sync (sd_no_prompt_service_get_type (), NULL,
                                                       open_session ? SECRET_SERVICE_OPEN_SESSION : SECRET_SERVICE_NONE,
                                                       cancellable, error);
    g_object_unref (bus);
    if (service != NULL) {
        GDBusConnection *connection = g_dbus_proxy_get_connection (G_DBUS_PROXY (service));
        g_dbus_connection_set_exit_on_close (connection, FALSE);
    }
    return service;
}

/* ---- which provider answers ------------------------------------------------------ */

int
sd_service_owner_among (SecretService *service, const char **names, int count, GCancellable *cancellable)
{
    GDBusProxy *proxy = G_DBUS_PROXY (service);
    char *unique = g_dbus_proxy_get_name_owner (proxy);
    if (unique == NULL)
        return -1;
    GDBusConnection *bus = g_dbus_proxy_get_connection (proxy);
    /* Every GetNameOwner goes out before the first answer is awaited: one round trip. */
    GMainContext *context = g_main_context_new ();
    g_main_context_push_thread_default (context);
    SdPendingCall *calls = g_new0 (SdPendingCall, count);
    for (int i = 0; i < count; i++)
        sd_call_bus (bus, "GetNameOwner", g_variant_new ("(s)", names[i]), "(s)", cancellable, &calls[i]);
    int found = -1;
    for (int i = 0; i < count; i++) {
        while (!calls[i].done)
            g_main_context_iteration (context, TRUE);
        const char *owner = NULL;
        if (calls[i].reply != NULL)
            g_variant_get (calls[i].reply, "(&s)", &owner);
        if (found < 0 && g_strcmp0 (owner, unique) == 0)
            found = i;
        sd_end_call (context, &calls[i], cancellable);
    }
    g_free (calls);
    g_main_context_pop_thread_default (context);
    g_main_context_unref (context);
    g_free (unique);
    return found;
}
