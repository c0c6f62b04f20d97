/* Secret Service calls libsecret has no function for (or none that Swift can call), and
   the attribute tables and secret values the calls take. */
#include "internal.h"

/* A floating a{ss} variant of a string-to-string table. */
static GVariant *
attributes_variant (GHashTable *attributes)
{
    GVariantBuilder builder;
    g_variant_builder_init (&builder, G_VARIANT_TYPE ("a{ss}"));
    GHashTableIter iter;
    gpointer key, value;
    g_hash_table_iter_init (&iter, attributes);
    while (g_hash_table_iter_next (&iter, &key, &value))
        g_variant_builder_add (&builder, "{ss}", (const char *) key, (const char *) value);
    return g_variant_builder_end (&builder);
}

GHashTable *
sd_item_properties_new (const char *label, GHashTable *attributes)
{
    GHashTable *properties = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
                                                    (GDestroyNotify) g_variant_unref);
    g_hash_table_insert (properties, g_strdup ("org.freedesktop.Secret.Item.Label"),
                         g_variant_ref_sink (g_variant_new_string (label)));
    g_hash_table_insert (properties, g_strdup ("org.freedesktop.Secret.Item.Attributes"),
                         g_variant_ref_sink (attributes_variant (attributes)));
    return properties;
}

gboolean
sd_object_property (SecretService *service, const char *path, const char *interface, const char *name,
                    const char *type, GVariant **value, GCancellable *cancellable, GError **error)
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
    if (!g_variant_is_of_type (*value, G_VARIANT_TYPE (type)))
        g_clear_pointer (value, g_variant_unref);
    return TRUE;
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

    /* A context of this call's own: no other source runs while both answers are awaited. */
    GMainContext *context = g_main_context_new ();
    g_main_context_push_thread_default (context);
    SdPendingCall search = { FALSE, NULL, NULL };
    SdPendingCall read = { TRUE, NULL, NULL };
    g_dbus_connection_call (connection, owner, "/org/freedesktop/secrets", "org.freedesktop.Secret.Service",
                            "SearchItems", g_variant_new ("(@a{ss})", attributes_variant (attributes)),
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
