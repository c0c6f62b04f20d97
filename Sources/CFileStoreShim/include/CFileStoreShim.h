#ifndef C_FILE_STORE_SHIM_H
#define C_FILE_STORE_SHIM_H

// What SecureDictionaryFileStore needs from C: the kernel keyring's system calls (variadic
// syscall(2), which Swift cannot call; no libkeyutils needed), and scrypt, HKDF and
// AES-GCM by BoringSSL with every key in a buffer that is wiped.

#include <stddef.h>
#include <stdint.h>

// --- The kernel keyring (kernel_keyring.c, one call each of `user` keys): each returns what
// its system call returns, -1 with errno set on failure. The session keyring is never a new
// one; add replaces the key of that description in `keyring`; search finds a key this
// process possesses; read and describe return the full length, copying at most `length` (a
// keyring's payload is its keys' serials, int32_t; a description is
// "type;uid;gid;perm;description" and a NUL); a timeout of 0 seconds is none.
long sd_keyring_session(void);
long sd_keyring_add(const char *description, const void *payload, size_t length, int32_t keyring);
long sd_keyring_search(int32_t keyring, const char *description);
long sd_keyring_read(int32_t key, void *buffer, size_t length);
long sd_keyring_describe(int32_t key, char *buffer, size_t length);
long sd_keyring_set_timeout(int32_t key, unsigned int seconds);
long sd_keyring_revoke(int32_t key);
long sd_keyring_unlink(int32_t key, int32_t keyring);

// --- The files' encryption (crypto.c, which says why here): each returns 1 on success, and
// writes keys and plaintexts only to `out`, which the caller wipes.

/// scrypt (RFC 7914) of `password` with `salt`, N = 2^log2_n, r, p, written to `out`; fails
/// for parameters out of bounds, or when more than `max_memory` bytes are needed.
int sd_scrypt(
    const uint8_t *password, size_t password_length, const uint8_t *salt, size_t salt_length, unsigned int log2_n,
    unsigned int r, unsigned int p, size_t max_memory, uint8_t *out, size_t out_length);

/// HKDF-SHA256 of `secret` with `salt` and `info` into `out`.
int sd_hkdf_sha256(
    uint8_t *out, size_t out_length, const uint8_t *secret, size_t secret_length, const uint8_t *salt,
    size_t salt_length, const uint8_t *info, size_t info_length);

/// AES-256-GCM under HKDF-SHA256(master, salt, label), with the 12-byte `nonce` and `aad`
/// authenticated. A seal (`open` 0) of the plaintext `in` writes ciphertext and tag to `out`
/// (in_length + 16 bytes); an open (`open` 1) of ciphertext and tag `in` writes the plaintext
/// to `out` (in_length − 16 bytes) when it authenticates.
int sd_file_crypt(
    int open, const uint8_t *master, size_t master_length, const uint8_t *salt, size_t salt_length,
    const uint8_t *label, size_t label_length, const uint8_t *nonce, const uint8_t *aad, size_t aad_length,
    const uint8_t *in, size_t in_length, uint8_t *out);

#endif
