#include "CSecretShim.h"

/* ---- a SecretService that never prompts ---------------------------------------- */

typedef struct { SecretService parent; } SdNoPromptService;
typedef struct { SecretServiceClass parent_class; } SdNoPromptServiceClass;

G_DEFINE_TYPE (SdNoPromptService, sd_no_prompt_service, SECRET_TYPE_SERVICE)

static const char no_prompt_message[] =
    "the keyring is locked and SecureDictionary does not show unlock prompts";

static GVariant *
no_prompt_sync (SecretService *self, SecretPrompt *prompt, GCancellable *cancellable,
                const GVariantType *return_type, GError **error)
{
    g_set_error_literal (error, SECRET_ERROR, SECRET_ERROR_IS_LOCKED, no_prompt_message);
    return NULL;
}

static void
no_prompt_async (SecretService *self, SecretPrompt *prompt, const GVariantType *return_type,
                 GCancellable *cancellable, GAsyncReadyCallback callback, gpointer user_data)
{
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
sd_service_open (gboolean allow_prompts, GCancellable *cancellable, GError **error)
{
    GType type = allow_prompts ? SECRET_TYPE_SERVICE : sd_no_prompt_service_get_type ();
    SecretService *service = secret_service_open_sync (type, NULL, SECRET_SERVICE_OPEN_SESSION,
                                                       cancellable, error);
    if (service != NULL) {
        GDBusConnection *connection = g_dbus_proxy_get_connection (G_DBUS_PROXY (service));
        g_dbus_connection_set_exit_on_close (connection, FALSE);
    }
    return service;
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

/* ---- secret values -------------------------------------------------------------- */

const unsigned char *
sd_value_bytes (SecretValue *value, size_t *length)
{
    gsize size = 0;
    const gchar *bytes = value != NULL ? secret_value_get (value, &size) : NULL;
    *length = bytes != NULL ? size : 0;
    return (const unsigned char *) bytes;
}

SecretValue *
sd_value_new_binary (const unsigned char *bytes, size_t length)
{
    return secret_value_new ((const gchar *) bytes, (gssize) length, "application/octet-stream");
}

GQuark sd_secret_error_quark (void) { return SECRET_ERROR; }
GQuark sd_io_error_quark (void) { return G_IO_ERROR; }
GQuark sd_dbus_error_quark (void) { return G_DBUS_ERROR; }
