#include "CSecretShim.h"

/* ---- a SecretService that prompts only to confirm, never to unlock ------------ */

typedef struct {
    SecretService parent;
    gboolean confirmations_allowed;   /* set by sd_service_allow_confirmations */
    gboolean keep_prompt_on_cancel;   /* set by sd_service_set_dismiss_on_cancel */
} SdNoPromptService;
typedef struct { SecretServiceClass parent_class; } SdNoPromptServiceClass;

G_DEFINE_TYPE (SdNoPromptService, sd_no_prompt_service, SECRET_TYPE_SERVICE)

static const char no_prompt_message[] =
    "the keyring is locked and SecureDictionary does not show unlock prompts";

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

static void
mark_prompted (GCancellable *cancellable)
{
    gint *flag = cancellable != NULL ? g_object_get_data (G_OBJECT (cancellable), prompted_key) : NULL;
    if (flag != NULL)
        g_atomic_int_set (flag, 1);
}

void
sd_service_allow_confirmations (SecretService *service, gboolean allowed)
{
    ((SdNoPromptService *) service)->confirmations_allowed = allowed;
}

void
sd_service_set_dismiss_on_cancel (SecretService *service, gboolean dismiss)
{
    ((SdNoPromptService *) service)->keep_prompt_on_cancel = !dismiss;
}

/* One confirmation prompt in flight: Prompt.Prompt, then the prompt's Completed signal.
   libsecret's own prompt code is not used: it fails without an error when a prompt is
   dismissed (the caller would wait for the deadline), and it cannot tell us it is waiting
   for a human. */
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
    /* The deadline passed: take the dialog off the screen (nobody waits for the answer),
       unless told not to (gnome-keyring 42.1 aborts on Dismiss of a shown unlock prompt),
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
    closure->dismiss_on_cancel = !((SdNoPromptService *) self)->keep_prompt_on_cancel;
    g_task_set_task_data (task, closure, confirm_closure_free);
    mark_prompted (cancellable);
    /* Subscribed before Prompt is called, so a Completed sent at once is not missed. The
       prompt's path is unique, so the path alone picks its signals. */
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

static GVariant *
no_prompt_sync (SecretService *self, SecretPrompt *prompt, GCancellable *cancellable,
                const GVariantType *return_type, GError **error)
{
    /* libsecret's *_sync calls run the async ones in a loop of their own: only
       prompt_async is reached. */
    g_set_error_literal (error, SECRET_ERROR, SECRET_ERROR_IS_LOCKED, no_prompt_message);
    return NULL;
}

static void
no_prompt_async (SecretService *self, SecretPrompt *prompt, const GVariantType *return_type,
                 GCancellable *cancellable, GAsyncReadyCallback callback, gpointer user_data)
{
    if (((SdNoPromptService *) self)->confirmations_allowed) {
        confirm_async (self, prompt, return_type, cancellable, callback, user_data);
        return;
    }
    g_task_report_new_error (self, callback, user_data, no_prompt_async,
                             SECRET_ERROR, SECRET_ERROR_IS_LOCKED, "%s", no_prompt_message);
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
    service_class->prompt_sync = no_prompt_sync;
    service_class->prompt_async = no_prompt_async;
    service_class->prompt_finish = no_prompt_finish;
}

SecretService *
sd_service_open (GCancellable *cancellable, GError **error)
{
    SecretService *service = secret_service_open_sync (sd_no_prompt_service_get_type (), NULL,
                                                       SECRET_SERVICE_OPEN_SESSION,
                                                       cancellable, error);
    if (service != NULL) {
        GDBusConnection *connection = g_dbus_proxy_get_connection (G_DBUS_PROXY (service));
        g_dbus_connection_set_exit_on_close (connection, FALSE);
    }
    return service;
}

/* ---- which provider answers ------------------------------------------------------ */

static gboolean
same_owner (GDBusConnection *bus, const char *unique, const char *name)
{
    GVariant *reply = g_dbus_connection_call_sync (bus, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                                                   "org.freedesktop.DBus", "GetNameOwner", g_variant_new ("(s)", name),
                                                   G_VARIANT_TYPE ("(s)"), G_DBUS_CALL_FLAGS_NONE, 1000, NULL, NULL);
    if (reply == NULL)
        return FALSE;
    const char *owner = NULL;
    g_variant_get (reply, "(&s)", &owner);
    gboolean same = g_strcmp0 (owner, unique) == 0;
    g_variant_unref (reply);
    return same;
}

int
sd_service_provider (SecretService *service)
{
    GDBusProxy *proxy = G_DBUS_PROXY (service);
    char *unique = g_dbus_proxy_get_name_owner (proxy);
    int provider = SD_PROVIDER_OTHER;
    if (unique != NULL) {
        GDBusConnection *bus = g_dbus_proxy_get_connection (proxy);
        if (same_owner (bus, unique, "org.keepassxc.KeePassXC.MainWindow"))
            provider = SD_PROVIDER_KEEPASSXC;
        else if (same_owner (bus, unique, "org.kde.kwalletd5") || same_owner (bus, unique, "org.kde.kwalletd6"))
            provider = SD_PROVIDER_KWALLET;
        else if (same_owner (bus, unique, "org.gnome.keyring"))
            provider = SD_PROVIDER_GNOME_KEYRING;
    }
    g_free (unique);
    return provider;
}

/* ---- attribute tables and item properties ------------------------------------- */

GHashTable *
sd_attributes_new (const char *service, const char *application,
                   const char *dictionary, const char *schema)
{
    GHashTable *attributes = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
    if (service != NULL)
        g_hash_table_insert (attributes, g_strdup ("service"), g_strdup (service));
    if (application != NULL)
        g_hash_table_insert (attributes, g_strdup ("application"), g_strdup (application));
    if (dictionary != NULL)
        g_hash_table_insert (attributes, g_strdup ("dictionary"), g_strdup (dictionary));
    if (schema != NULL)
        g_hash_table_insert (attributes, g_strdup ("xdg:schema"), g_strdup (schema));
    return attributes;
}

GHashTable *
sd_item_properties_new (const char *label, GHashTable *attributes)
{
    GHashTable *properties = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
                                                    (GDestroyNotify) g_variant_unref);
    GVariantBuilder builder;
    GHashTableIter iter;
    gpointer key, value;

    g_variant_builder_init (&builder, G_VARIANT_TYPE ("a{ss}"));
    g_hash_table_iter_init (&iter, attributes);
    while (g_hash_table_iter_next (&iter, &key, &value))
        g_variant_builder_add (&builder, "{ss}", (const char *) key, (const char *) value);

    g_hash_table_insert (properties, g_strdup ("org.freedesktop.Secret.Item.Label"),
                         g_variant_ref_sink (g_variant_new_string (label)));
    g_hash_table_insert (properties, g_strdup ("org.freedesktop.Secret.Item.Attributes"),
                         g_variant_ref_sink (g_variant_builder_end (&builder)));
    return properties;
}

/* ---- properties of other objects ---------------------------------------------- */

static GVariant *
get_property (SecretService *service, const char *path, const char *interface,
              const char *name, GCancellable *cancellable, GError **error)
{
    GDBusProxy *proxy = G_DBUS_PROXY (service);
    GVariant *reply = g_dbus_connection_call_sync (
        g_dbus_proxy_get_connection (proxy), g_dbus_proxy_get_name (proxy), path,
        "org.freedesktop.DBus.Properties", "Get", g_variant_new ("(ss)", interface, name),
        G_VARIANT_TYPE ("(v)"), G_DBUS_CALL_FLAGS_NONE, -1, cancellable, error);
    if (reply == NULL)
        return NULL;
    GVariant *value = NULL;
    g_variant_get (reply, "(v)", &value);
    g_variant_unref (reply);
    return value;
}

int
sd_collection_is_locked (SecretService *service, const char *path,
                         GCancellable *cancellable, GError **error)
{
    GVariant *value = get_property (service, path, "org.freedesktop.Secret.Collection",
                                    "Locked", cancellable, error);
    if (value == NULL)
        return -1;
    int locked = g_variant_is_of_type (value, G_VARIANT_TYPE_BOOLEAN)
                     ? (g_variant_get_boolean (value) ? 1 : 0)
                     : 1;   /* a malformed answer is treated as locked, never as open */
    g_variant_unref (value);
    return locked;
}

char *
sd_collection_label (SecretService *service, const char *path,
                     GCancellable *cancellable, GError **error)
{
    GVariant *value = get_property (service, path, "org.freedesktop.Secret.Collection",
                                    "Label", cancellable, error);
    if (value == NULL)
        return NULL;
    char *label = g_variant_is_of_type (value, G_VARIANT_TYPE_STRING)
                      ? g_variant_dup_string (value, NULL)
                      : g_strdup ("");
    g_variant_unref (value);
    return label;
}

GHashTable *
sd_item_attributes (SecretService *service, const char *path,
                    GCancellable *cancellable, GError **error)
{
    GVariant *value = get_property (service, path, "org.freedesktop.Secret.Item",
                                    "Attributes", cancellable, error);
    if (value == NULL)
        return NULL;
    GHashTable *attributes = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
    if (g_variant_is_of_type (value, G_VARIANT_TYPE ("a{ss}"))) {
        GVariantIter iter;
        const char *key, *text;
        g_variant_iter_init (&iter, value);
        while (g_variant_iter_next (&iter, "{&s&s}", &key, &text))
            g_hash_table_insert (attributes, g_strdup (key), g_strdup (text));
    }
    g_variant_unref (value);
    return attributes;
}

gboolean
sd_item_set_secret (SecretService *service, const char *path, SecretValue *value,
                    GCancellable *cancellable, GError **error)
{
    GDBusProxy *proxy = G_DBUS_PROXY (service);
    GVariant *secret = secret_service_encode_dbus_secret (service, value);
    if (secret == NULL) {
        g_set_error_literal (error, SECRET_ERROR, SECRET_ERROR_PROTOCOL, "the secret could not be encoded for the session");
        return FALSE;
    }
    GVariant *reply = g_dbus_connection_call_sync (
        g_dbus_proxy_get_connection (proxy), g_dbus_proxy_get_name (proxy), path,
        "org.freedesktop.Secret.Item", "SetSecret", g_variant_new_tuple (&secret, 1),
        G_VARIANT_TYPE ("()"), G_DBUS_CALL_FLAGS_NO_AUTO_START, -1, cancellable, error);
    if (reply == NULL)
        return FALSE;
    g_variant_unref (reply);
    return TRUE;
}

static void release_name (GDBusConnection *bus, const char *name);

/* A floating dictionary variant of `type` ("a{sv}" or "a{ss}") from a hash table whose
   values are what `entry` ("{sv}" or "{ss}") takes: GVariants or strings. */
static GVariant *
table_variant (GHashTable *table, const char *type, const char *entry)
{
    GVariantBuilder builder;
    g_variant_builder_init (&builder, G_VARIANT_TYPE (type));
    GHashTableIter iter;
    gpointer key, value;
    g_hash_table_iter_init (&iter, table);
    while (g_hash_table_iter_next (&iter, &key, &value))
        g_variant_builder_add (&builder, entry, (const char *) key, value);
    return g_variant_builder_end (&builder);
}

typedef struct {
    gboolean done;
    GVariant *reply;
    GError *error;
} SdPendingCall;

static void
on_call_answered (GObject *source, GAsyncResult *result, gpointer data)
{
    SdPendingCall *call = data;
    call->reply = g_dbus_connection_call_finish (G_DBUS_CONNECTION (source), result, &call->error);
    call->done = TRUE;
}

struct SdPendingCreate {
    GMainContext *context;
    SdPendingCall call;
};

SdPendingCreate *
sd_collection_create_item_send (SecretService *service, const char *collection, GHashTable *properties,
                                SecretValue *value, GDBusConnection *held, const char *name, gboolean *handed,
                                GCancellable *cancellable, GError **error)
{
    *handed = FALSE;
    if (g_cancellable_set_error_if_cancelled (cancellable, error))
        return NULL;
    GDBusProxy *proxy = G_DBUS_PROXY (service);
    GDBusConnection *connection = g_dbus_proxy_get_connection (proxy);
    GVariant *secret = secret_service_encode_dbus_secret (service, value);
    if (secret == NULL) {
        g_set_error_literal (error, SECRET_ERROR, SECRET_ERROR_PROTOCOL, "the secret could not be encoded for the session");
        return NULL;
    }

    /* The reply is awaited in a context of this call's own, so no other source runs meanwhile. */
    SdPendingCreate *pending = g_new0 (SdPendingCreate, 1);
    pending->context = g_main_context_new ();
    g_main_context_push_thread_default (pending->context);
    /* g_dbus_connection_call queues the message on the connection before it returns; a
       message sent later on the same connection goes out after it, in serial order. */
    g_dbus_connection_call (connection, g_dbus_proxy_get_name (proxy), collection, "org.freedesktop.Secret.Collection",
                            "CreateItem",
                            g_variant_new ("(@a{sv}@(oayays)b)", table_variant (properties, "a{sv}", "{sv}"), secret, TRUE),
                            G_VARIANT_TYPE ("(oo)"), G_DBUS_CALL_FLAGS_NO_AUTO_START, -1, cancellable,
                            on_call_answered, &pending->call);
    g_main_context_pop_thread_default (pending->context);
    if (held != NULL && name != NULL && held == connection) {
        release_name (held, name);
        *handed = TRUE;
    }
    return pending;
}

gboolean
sd_collection_create_item_finish (SdPendingCreate *pending, char **item, char **prompt, GError **error)
{
    while (!pending->call.done)
        g_main_context_iteration (pending->context, TRUE);
    g_main_context_unref (pending->context);
    SdPendingCall call = pending->call;
    g_free (pending);
    if (call.reply == NULL) {
        g_propagate_error (error, call.error);
        return FALSE;
    }
    g_variant_get (call.reply, "(oo)", item, prompt);
    g_variant_unref (call.reply);
    return TRUE;
}

gboolean
sd_search_reading_one (SecretService *service, GHashTable *attributes, const char *guess, char ***unlocked,
                       char ***locked, SecretValue **guessed, GCancellable *cancellable, GError **error)
{
    *unlocked = NULL;
    *locked = NULL;
    *guessed = NULL;
    GDBusProxy *proxy = G_DBUS_PROXY (service);
    GDBusConnection *connection = g_dbus_proxy_get_connection (proxy);
    const char *owner = g_dbus_proxy_get_name (proxy);
    const char *session = secret_service_get_session_dbus_path (service);

    /* Both answers are awaited in a context of this call's own, so no other source runs. */
    GMainContext *context = g_main_context_new ();
    g_main_context_push_thread_default (context);
    SdPendingCall search = { FALSE, NULL, NULL };
    SdPendingCall read = { TRUE, NULL, NULL };
    g_dbus_connection_call (connection, owner, "/org/freedesktop/secrets", "org.freedesktop.Secret.Service",
                            "SearchItems", g_variant_new ("(@a{ss})", table_variant (attributes, "a{ss}", "{ss}")),
                            G_VARIANT_TYPE ("(aoao)"),
                            G_DBUS_CALL_FLAGS_NO_AUTO_START, -1, cancellable, on_call_answered, &search);
    if (guess != NULL && session != NULL) {
        const char *items[] = { guess, NULL };
        read.done = FALSE;
        g_dbus_connection_call (connection, owner, "/org/freedesktop/secrets", "org.freedesktop.Secret.Service",
                                "GetSecrets", g_variant_new ("(^aoo)", items, session),
                                G_VARIANT_TYPE ("(a{o(oayays)})"), G_DBUS_CALL_FLAGS_NO_AUTO_START, -1, cancellable,
                                on_call_answered, &read);
    }
    while (!search.done || !read.done)
        g_main_context_iteration (context, TRUE);
    g_main_context_pop_thread_default (context);
    g_main_context_unref (context);

    /* The guessed item's secret, when the service sent one the session can decrypt; any
       failure of this read is left to the caller's own read of the path the search finds. */
    if (read.reply != NULL) {
        GVariant *secrets = g_variant_get_child_value (read.reply, 0);
        GVariant *secret = g_variant_lookup_value (secrets, guess, G_VARIANT_TYPE ("(oayays)"));
        if (secret != NULL) {
            *guessed = secret_service_decode_dbus_secret (service, secret);
            g_variant_unref (secret);
        }
        g_variant_unref (secrets);
        g_variant_unref (read.reply);
    }
    g_clear_error (&read.error);
    if (search.reply == NULL) {
        if (*guessed != NULL)
            secret_value_unref (*guessed);
        *guessed = NULL;
        g_propagate_error (error, search.error);
        return FALSE;
    }
    g_variant_get (search.reply, "(^ao^ao)", unlocked, locked);
    g_variant_unref (search.reply);
    return TRUE;
}

void
sd_prompt_dismiss (SecretService *service, const char *path, gint timeout_ms)
{
    GDBusProxy *proxy = G_DBUS_PROXY (service);
    GVariant *reply = g_dbus_connection_call_sync (
        g_dbus_proxy_get_connection (proxy), g_dbus_proxy_get_name (proxy), path, "org.freedesktop.Secret.Prompt",
        "Dismiss", NULL, NULL, G_DBUS_CALL_FLAGS_NO_AUTO_START, timeout_ms, NULL, NULL);
    if (reply != NULL)
        g_variant_unref (reply);
}

/* ---- secret values -------------------------------------------------------------- */

const unsigned char *
sd_value_bytes (SecretValue *value, size_t *length)
{
    gsize size = 0;
    const gchar *bytes = value != NULL ? secret_value_get (value, &size) : NULL;
    *length = bytes != NULL ? size : 0;
    return (const unsigned char *) bytes;
}

static void
borrowed_free (gpointer bytes)
{
    /* Not ours to free: see sd_value_new_borrowing. */
}

SecretValue *
sd_value_new_borrowing (const unsigned char *bytes, size_t length)
{
    /* secret_value_new would copy the bytes into memory of libsecret's own: one more copy
       of the secret per write. The owner's buffer is wiped by its owner instead. */
    return secret_value_new_full ((gchar *) bytes, (gssize) length, "application/octet-stream", borrowed_free);
}

GQuark sd_secret_error_quark (void) { return SECRET_ERROR; }
GQuark sd_io_error_quark (void) { return G_IO_ERROR; }
GQuark sd_dbus_error_quark (void) { return G_DBUS_ERROR; }

/* ---- the cross-process writer lock: a well-known name on the session bus ------ */

static GDBusConnection *
session_bus (GError **error)
{
    GDBusConnection *bus = g_bus_get_sync (G_BUS_TYPE_SESSION, NULL, error);
    if (bus != NULL)
        g_dbus_connection_set_exit_on_close (bus, FALSE);
    return bus;
}

static GVariant *
bus_call (GDBusConnection *bus, const char *method, GVariant *parameters, const char *reply_type,
          int timeout_ms, GError **error)
{
    return g_dbus_connection_call_sync (bus, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                                        "org.freedesktop.DBus", method, parameters,
                                        G_VARIANT_TYPE (reply_type), G_DBUS_CALL_FLAGS_NONE,
                                        timeout_ms, NULL, error);
}

static void
on_name_acquired (GDBusConnection *bus, const char *sender, const char *path,
                  const char *interface, const char *signal, GVariant *parameters, gpointer flag)
{
    *(gboolean *) flag = TRUE;
}

static gboolean
on_deadline (gpointer flag)
{
    *(gboolean *) flag = TRUE;
    return G_SOURCE_REMOVE;
}

/* Whether this connection is the primary owner of name now. */
static gboolean
owns_name (GDBusConnection *bus, const char *name, int timeout_ms)
{
    GVariant *reply = bus_call (bus, "GetNameOwner", g_variant_new ("(s)", name), "(s)", timeout_ms, NULL);
    if (reply == NULL)
        return FALSE;
    const char *owner = NULL;
    g_variant_get (reply, "(&s)", &owner);
    gboolean ours = g_strcmp0 (owner, g_dbus_connection_get_unique_name (bus)) == 0;
    g_variant_unref (reply);
    return ours;
}

static int
remaining_ms (gint64 deadline_us)
{
    gint64 left = deadline_us - g_get_monotonic_time ();
    return left <= 0 ? 0 : (int) MIN (left / 1000 + 1, G_MAXINT);
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
    gboolean acquired;       /* a NameAcquired for name arrived */
    gboolean acquired_early; /* ... before the answer (see on_request_answered) */
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
    /* A NameAcquired that came before this answer is normally not for a queued request: the
       bus sends that one only after it answered IN_QUEUE. It may be from a grant at once
       (this request's) or from an abandoned earlier request whose grant crossed its release.
       That the two reach this context in the bus's order is how GLib works today, not a
       documented promise: so an early one is remembered, and an IN_QUEUE answer then asks
       the bus who owns the name instead of trusting or dropping it. */
    request->acquired_early = request->acquired;
    request->acquired = FALSE;
    request->answered = TRUE;
}

SdNameRequest *
sd_bus_name_request (const char *name, GError **error)
{
    GDBusConnection *bus = session_bus (error);
    if (bus == NULL)
        return NULL;
    SdNameRequest *request = g_new0 (SdNameRequest, 1);
    request->bus = bus;
    request->context = g_main_context_new ();
    request->name = g_strdup (name);
    request->cancellable = g_cancellable_new ();
    g_main_context_push_thread_default (request->context);
    /* Subscribed before asking, so the NameAcquired of a queued request cannot be missed.
       The bus sends NameAcquired to this connection alone, which needs no match rule: none
       is added (an AddMatch and a RemoveMatch per write, the first ahead of RequestName). */
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

void
sd_bus_name_request_abandon (SdNameRequest *request)
{
    /* Leaves the queue, or gives back a name granted meanwhile: sent after RequestName on
       the same connection, so the bus reads it after. */
    release_name (request->bus, request->name);
    request_free (request);
}

int
sd_bus_name_request_finish (SdNameRequest *request, gint64 deadline_us, gboolean *at_once,
                            GDBusConnection **held, GError **error)
{
    gboolean expired = FALSE;
    GSource *timer = g_timeout_source_new (remaining_ms (deadline_us));
    g_source_set_callback (timer, on_deadline, &expired, NULL);
    g_source_attach (timer, request->context);
    while (!request->answered && !expired)
        g_main_context_iteration (request->context, TRUE);
    int result = -1;
    *at_once = FALSE;
    if (!request->answered) {
        result = 0;
    } else if (request->error != NULL) {
        g_propagate_error (error, request->error);
        request->error = NULL;
    } else if (request->code == 1 || request->code == 4) {   /* PRIMARY_OWNER, ALREADY_OWNER */
        result = 1;
        *at_once = TRUE;
    } else if (request->code == 2) {                          /* IN_QUEUE: wait for NameAcquired */
        if (request->acquired_early && owns_name (request->bus, request->name, MAX (remaining_ms (deadline_us), 100))) {
            result = 1;
        } else {
            while (!request->acquired && !expired)
                g_main_context_iteration (request->context, TRUE);
            result = request->acquired ? 1 : 0;
        }
    } else {
        g_set_error (error, G_DBUS_ERROR, G_DBUS_ERROR_FAILED, "RequestName answered %u", request->code);
    }
    g_source_destroy (timer);
    g_source_unref (timer);
    /* The name lives as long as the connection that owns it: keep that connection until the
       name is given back, even if everything else in the process lets go of it. */
    *held = result == 1 ? g_object_ref (request->bus) : NULL;
    if (result == 0)
        sd_bus_name_request_abandon (request);
    else
        request_free (request);
    return result;
}

static void
release_name (GDBusConnection *bus, const char *name)
{
    /* Sent without awaiting the reply (one round trip less per write): the bus serves the
       next in line when it reads the message, and a later RequestName of this process goes
       out after it on the same connection, so it cannot overtake the release. */
    g_dbus_connection_call (bus, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                            "ReleaseName", g_variant_new ("(s)", name), NULL, G_DBUS_CALL_FLAGS_NONE, -1,
                            NULL, NULL, NULL);
}

void
sd_bus_name_unlock (GDBusConnection *held, const char *name)
{
    release_name (held, name);
    g_object_unref (held);
}

gint64
sd_bus_name_owner_pid (const char *name)
{
    GDBusConnection *bus = session_bus (NULL);
    if (bus == NULL)
        return -1;
    gint64 pid = -1;
    GVariant *owner = bus_call (bus, "GetNameOwner", g_variant_new ("(s)", name), "(s)", 1000, NULL);
    if (owner != NULL) {
        const char *unique = NULL;
        g_variant_get (owner, "(&s)", &unique);
        GVariant *reply = bus_call (bus, "GetConnectionUnixProcessID", g_variant_new ("(s)", unique),
                                    "(u)", 1000, NULL);
        if (reply != NULL) {
            guint32 value = 0;
            g_variant_get (reply, "(u)", &value);
            pid = value;
            g_variant_unref (reply);
        }
        g_variant_unref (owner);
    }
    g_object_unref (bus);
    return pid;
}

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
    GDBusConnection *bus = session_bus (error);
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
