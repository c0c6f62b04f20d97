// The kernel keyring (keyrings(7)) through syscall(2): one function per call, no logic.
#include "CFileStoreShim.h"

#include <linux/keyctl.h>
#include <sys/syscall.h>
#include <unistd.h>

long sd_keyring_session(void) {
    return syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0);
}

long sd_keyring_add(const char *description, const void *payload, size_t length, int32_t keyring) {
    return syscall(SYS_add_key, "user", description, payload, length, keyring);
}

long sd_keyring_search(int32_t keyring, const char *description) {
    return syscall(SYS_keyctl, KEYCTL_SEARCH, keyring, "user", description, 0);
}

long sd_keyring_read(int32_t key, void *buffer, size_t length) {
    return syscall(SYS_keyctl, KEYCTL_READ, key, buffer, length);
}

long sd_keyring_set_timeout(int32_t key, unsigned int seconds) {
    return syscall(SYS_keyctl, KEYCTL_SET_TIMEOUT, key, seconds);
}

long sd_keyring_revoke(int32_t key) {
    return syscall(SYS_keyctl, KEYCTL_REVOKE, key);
}

long sd_keyring_describe(int32_t key, char *buffer, size_t length) {
    return syscall(SYS_keyctl, KEYCTL_DESCRIBE, key, buffer, length);
}

long sd_keyring_unlink(int32_t key, int32_t keyring) {
    return syscall(SYS_keyctl, KEYCTL_UNLINK, key, keyring);
}
