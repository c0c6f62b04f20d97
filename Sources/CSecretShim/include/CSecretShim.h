#ifndef CSECRETSHIM_H
#define CSECRETSHIM_H
/* What Swift cannot express: a GObject subclass of SecretService, variadic GVariant and prctl
   calls, waits in a GLib main context of their own. A function sends, waits and converts; the
   Swift caller decides. One file per section below. Every deadline_us is on
   g_get_monotonic_time()'s clock. */
#include "../../CLibSecret/shim.h"
#include <sys/prctl.h>   /* the PR_ options of sd_process_prctl */

/* ---- service.c: the Secret Service connection ---------------------------------- */

/* A new, unshared Secret Service object over sd_session_bus_until's connection, with a
   transport session if open_session. Its prompts fail at once with SECRET_ERROR_IS_LOCKED (no
   unlock dialog), except while confirmations are allowed (below). */
SecretService *sd_service_open(gint64 deadline_us, gboolean open_session, GCancellable *cancellable, GError **error);

/* While allowed, a prompt the service returns is run (Prompt.Prompt, then its Completed
   signal). A dismissed prompt fails with SD_PROMPT_DISMISSED; cancelling the call fails with
   G_IO_ERROR_CANCELLED and, if dismiss_on_cancel, dismisses the prompt (Prompt.Dismiss). */
void sd_service_allow_confirmations(SecretService *service, gboolean allowed, gboolean dismiss_on_cancel);
GQuark sd_prompt_error_quark(void);
enum { SD_PROMPT_DISMISSED = 1 };

/* A GCancellable that remembers whether a prompt ran under it (sd_cancellable_prompted, from
   any thread): a call stopped at its deadline then waited for a human. */
GCancellable *sd_cancellable_new(void);
gboolean sd_cancellable_prompted(GCancellable *cancellable);

/* The index of the first of `names` that the service's connection owns too, or -1
   (ProviderTraits.busNames). One round trip. */
int sd_service_owner_among(SecretService *service, const char **names, int count, GCancellable *cancellable);

/* ---- calls.c: Secret Service calls and values ---------------------------------- */

/* Item.SetSecret on the item at path, encrypted with the service's session: no provider
   prompts for it (ProviderTraits.replacesSecretInPlace). */
gboolean sd_item_set_secret(SecretService *service, const char *path, SecretValue *value,
                            GCancellable *cancellable, GError **error);

/* Service.SearchItems for `attributes` and, for a `guess` (an item path) on an open session,
   Service.GetSecrets of it sent right behind: one round trip. The search's unlocked and locked
   paths (g_strfreev) and, in *guessed, the guess's secret if one came that the session
   decrypts; FALSE with error set when the search failed. A failed read is left to the caller. */
gboolean sd_search_reading_one(SecretService *service, GHashTable *attributes, const char *guess,
                               char ***unlocked, char ***locked, SecretValue **guessed,
                               GCancellable *cancellable, GError **error);

/* CreateItem's properties: the label and the attributes (a string-to-string table). */
GHashTable *sd_item_properties_new(const char *label, GHashTable *attributes);

/* Properties.Get of `interface`'s `name` at `path`: TRUE with *value the property
   (g_variant_unref it), or NULL when it is not of `type`; FALSE with error set. */
gboolean sd_object_property(SecretService *service, const char *path, const char *interface, const char *name,
                            const char *type, GVariant **value, GCancellable *cancellable, GError **error);

/* ---- bus_name.c: the cross-process writer lock --------------------------------- */

/* The writer lock of one item (BusNameWriterLock): the well-known bus name `name`, asked for
   (RequestName) once the session bus is ready by deadline_us. Waits for the answer until
   answer_deadline_us and, when queued, for the name until wait_deadline_us: 1 (owned: *held
   owns the name until sd_bus_name_unlock), 0 (a deadline passed; out of the queue) or -1 with
   error set (no session bus, G_IO_ERROR_TIMED_OUT when it is not ready by deadline_us, or the
   bus refused, as a sandbox's proxy does). */
int sd_bus_name_lock(const char *name, gint64 deadline_us, gint64 answer_deadline_us, gint64 wait_deadline_us,
                     GDBusConnection **held, GError **error);

/* Gives the name back (ReleaseName) and lets go of the connection that held it. */
void sd_bus_name_unlock(GDBusConnection *held, const char *name);

/* ---- session_bus.c: the session bus, and who owns a well-known name --------------- */

/* GLib's shared session bus connection (a new reference, not exiting the process when it
   closes), once ready; NULL with error set when there is none, or G_IO_ERROR_TIMED_OUT when it
   is not ready by deadline_us (its handshake goes on). */
GDBusConnection *sd_session_bus_until(gint64 deadline_us, GError **error);

/* Iterates `context` until *done, or until deadline_us passed; returns *done. */
gboolean sd_iterate_until(GMainContext *context, const gboolean *done, gint64 deadline_us);

/* The milliseconds left until deadline_us, rounded up; 0 once it passed (a GLib or poll timeout). */
gint sd_remaining_ms(gint64 deadline_us);

/* Whether `name` has an owner (2), or can be D-Bus activated (1), or neither (0), in one
   round trip; -1 with error set: no session bus, or G_IO_ERROR_TIMED_OUT by deadline_us. */
int sd_bus_name_presence(const char *name, gint64 deadline_us, GError **error);

/* The process id of the name's current owner, or -1 (no owner, or no answer by deadline_us). */
gint64 sd_bus_name_owner_pid(const char *name, gint64 deadline_us);

/* Waits until `name` has an owner, after StartServiceByName if `start`: 1 (it has one), 0
   (none came by deadline_us), or -1 with error set: no session bus, no answer
   (G_IO_ERROR_TIMED_OUT), or the bus's answer that it cannot start it. */
int sd_bus_name_await_owner(const char *name, gboolean start, gint64 deadline_us, GError **error);

/* ---- watcher.c: changes in the keyring ------------------------------------------ */

/* Calls callback(SD_CHANGE_ITEMS, user_data), on a thread of its own, after every
   ItemCreated, ItemChanged or ItemDeleted of any collection, and SD_CHANGE_COLLECTIONS after a
   collection was created, deleted or changed (locked, unlocked), until stopped. Returns once
   subscribed; when the bus does not answer within about 100 ms (frozen), at once, subscribing
   once it answers and then calling both; NULL with error set when there is no session bus. */
enum { SD_CHANGE_ITEMS = 1, SD_CHANGE_COLLECTIONS = 2 };
typedef void (*SdChangeCallback)(int kind, void *user_data);
typedef struct SdWatcher SdWatcher;
SdWatcher *sd_watcher_start(SdChangeCallback callback, void *user_data, GError **error);

/* Stops the watcher and frees it (waits for its thread, unless called from it). */
void sd_watcher_stop(SdWatcher *watcher);

/* ---- process.c: prctl, memfd and terminals, for the library and the tool ------------ */

/* prctl(option, argument): PR_SET_DUMPABLE 0 keeps the process out of core dumps and ptrace;
   PR_GET_DUMPABLE answers 1 (dumpable), 0 or 2 (by root only); PR_SET_CHILD_SUBREAPER 1 makes
   orphaned descendants this process's children, so that `secure-dict keyring run` finds every
   process its command left. -1 with errno. */
int sd_process_prctl(int option, unsigned long argument);

/* A memfd named `name` holding the `count` bytes at `bytes`, read from its start, mode 0400,
   sealed against writing, resizing and further seals, inherited by a command (no
   close-on-exec). Its descriptor, or -1 with errno set (nothing left open). */
int sd_process_sealed_memory_file(const char *name, const void *bytes, size_t count);

/* A new pseudo-terminal for a command's output, in place of the terminal `like` (its window
   size), without OPOST: the side this process reads, and in *replica the command's side (both
   close-on-exec); -1 with errno set. */
int sd_process_open_output_terminal(int like, int *replica);

/* Copies the window size of the terminal `from` to `to`. 0, or -1. */
int sd_process_copy_window_size(int from, int to);

#endif
