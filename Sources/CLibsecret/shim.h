#ifndef CLIBSECRET_SHIM_H
#define CLIBSECRET_SHIM_H
// For secret-paths.h: a bulk read (one SearchItems, then GetSecrets on many paths) is what makes
// a restore of 10,000 accounts take seconds, not minutes (docs/architecture.md, "The keyring").
// Marked unstable upstream, yet unchanged since libsecret 0.7 (2012).
#define SECRET_API_SUBJECT_TO_CHANGE
#include <libsecret/secret.h>

/// The unique bus name that owns `name` now (g_free it), or NULL with `error` set (no owner, no
/// bus). A C shim because GVariant's builders are variadic, which Swift cannot call.
static inline gchar *clibsecret_name_owner(GDBusConnection *connection, const gchar *name, GCancellable *cancellable, GError **error) {
    GVariant *reply = g_dbus_connection_call_sync(
        connection, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "GetNameOwner",
        g_variant_new("(s)", name), G_VARIANT_TYPE("(s)"), G_DBUS_CALL_FLAGS_NONE, -1, cancellable, error);
    if (reply == NULL) return NULL;
    gchar *owner = NULL;
    g_variant_get(reply, "(s)", &owner);
    g_variant_unref(reply);
    return owner;
}
/// The process id of the connection that owns `name` (GetConnectionUnixProcessID), or 0.
static inline guint32 clibsecret_name_owner_pid(GDBusConnection *connection, const gchar *name, GCancellable *cancellable) {
    GVariant *reply = g_dbus_connection_call_sync(
        connection, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "GetConnectionUnixProcessID",
        g_variant_new("(s)", name), G_VARIANT_TYPE("(u)"), G_DBUS_CALL_FLAGS_NONE, -1, cancellable, NULL);
    if (reply == NULL) return 0;
    guint32 pid = 0;
    g_variant_get(reply, "(u)", &pid);
    g_variant_unref(reply);
    return pid;
}
#endif
