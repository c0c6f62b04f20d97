/* Secret Service calls libsecret has no function for (or none that Swift can call), and
   the attribute tables and secret values the calls take. */
#include "internal.h"

/* ---- attribute tables and item properties ------------------------------------- */

GHashTable *
sd_string_table_new (void)
{
    return g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
}

void
sd_string_table_insert (GHashTable *table, const char *key, const char *value)
{
    g_hash_table_insert (table, g_strdup (key), g_strdup (value));
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

/* The property `name` of the object at `path`, as a variant of `type`, through `*value`:
   TRUE with *value NULL when the answer has another type, FALSE with error set when the call
   failed. */
static gboolean
get_property (SecretService *service, const char *path, const char *interface, const char *name,
              const GVariantType *type, GVariant **value, GCancellable *cancellable, GError **error)
{
    GDBusProxy *proxy = G_DBUS_PROXY (service);
    GVariant *reply = g_dbus_connection_call_sync (
        g_dbus_proxy_get_connection (proxy), g_dbus_proxy_get_name (proxy), path,
        "org.freedesktop.DBus.Properties", "Get", g_variant_new ("(ss)", interface, name),
        G_VARIANT_TYPE ("(v)"), G_DBUS_CALL_FLAGS_NONE, -1, cancellable, error);
    *value = NULL;
    if (reply == NULL)
        return FALSE;
    g_variant_get (reply, "(v)", value);
    g_variant_unref (reply);
    if (!g_variant_is_of_type (*value, type))
        g_clear_pointer (value, g_variant_unref);
    return TRUE;
}

int
sd_collection_is_locked (SecretService *service, const char *path,
                         GCancellable *cancellable, GError **error)
{
    GVariant *value;
    if (!get_property (service, path, "org.freedesktop.Secret.Collection", "Locked", G_VARIANT_TYPE_BOOLEAN, &value,
                       cancellable, error))
        return -1;
    /* A malformed answer is treated as locked, never as open. */
    int locked = value == NULL || g_variant_get_boolean (value) ? 1 : 0;
    g_clear_pointer (&value, g_variant_unref);
    return locked;
}

char *
sd_collection_label (SecretService *service, const char *path,
                     GCancellable *cancellable, GError **error)
{
    GVariant *value;
    if (!get_property (service, path, "org.freedesktop.Secret.Collection", "Label", G_VARIANT_TYPE_STRING, &value,
                       cancellable, error))
        return NULL;
    char *label = value != NULL ? g_variant_dup_string (value, NULL) : g_strdup ("");
    g_clear_pointer (&value, g_variant_unref);
    return label;
}

GHashTable *
sd_item_attributes (SecretService *service, const char *path,
                    GCancellable *cancellable, GError **error)
{
    GVariant *value;
    if (!get_property (service, path, "org.freedesktop.Secret.Item", "Attributes", G_VARIANT_TYPE ("a{ss}"), &value,
                       cancellable, error))
        return NULL;
    GHashTable *attributes = sd_string_table_new ();
    if (value != NULL) {
        GVariantIter iter;
        const char *key, *text;
        g_variant_iter_init (&iter, value);
        while (g_variant_iter_next (&iter, "{&s&s}", &key, &text))
            sd_string_table_insert (attributes, key, text);
        g_variant_unref (value);
    }
    return attributes;
}

char **
sd_service_collections (SecretService *service, GCancellable *cancellable, GError **error)
{
    GVariant *value;
    if (!get_property (service, "/org/freedesktop/secrets", "org.freedesktop.Secret.Service", "Collections",
                       G_VARIANT_TYPE ("ao"), &value, cancellable, error))
        return NULL;
    if (value == NULL)
        return g_new0 (char *, 1);
    char **paths = g_variant_dup_objv (value, NULL);
    g_variant_unref (value);
    return paths;
}

gint64
sd_item_modified (SecretService *service, const char *path, GCancellable *cancellable, GError **error)
{
    GVariant *value;
    if (!get_property (service, path, "org.freedesktop.Secret.Item", "Modified", G_VARIANT_TYPE_UINT64, &value,
                       cancellable, error))
        return -1;
    /* A provider that answers with another type has no time to tell: 0, "unknown". */
    gint64 modified = value != NULL ? (gint64) MIN (g_variant_get_uint64 (value), (guint64) G_MAXINT64) : 0;
    g_clear_pointer (&value, g_variant_unref);
    return modified;
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

void
sd_pending_call_answered (GObject *source, GAsyncResult *result, gpointer data)
{
    SdPendingCall *call = data;
    call->reply = g_dbus_connection_call_finish (G_DBUS_CONNECTION (source), result, &call->error);
    call->done = TRUE;
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
                            G_DBUS_CALL_FLAGS_NO_AUTO_START, -1, cancellable, sd_pending_call_answered, &search);
    if (guess != NULL && session != NULL) {
        const char *items[] = { guess, NULL };
        read.done = FALSE;
        g_dbus_connection_call (connection, owner, "/org/freedesktop/secrets", "org.freedesktop.Secret.Service",
                                "GetSecrets", g_variant_new ("(^aoo)", items, session),
                                G_VARIANT_TYPE ("(a{o(oayays)})"), G_DBUS_CALL_FLAGS_NO_AUTO_START, -1, cancellable,
                                sd_pending_call_answered, &read);
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
sd_value_new_borrowing (const unsigned char *bytes, size_t length, const char *content_type)
{
    /* secret_value_new would copy the bytes into memory of libsecret's own: one more copy
       of the secret per write. The owner's buffer is wiped by its owner instead. */
    return secret_value_new_full ((gchar *) bytes, (gssize) length, content_type, borrowed_free);
}

GQuark sd_secret_error_quark (void) { return SECRET_ERROR; }
GQuark sd_io_error_quark (void) { return G_IO_ERROR; }
GQuark sd_dbus_error_quark (void) { return G_DBUS_ERROR; }
