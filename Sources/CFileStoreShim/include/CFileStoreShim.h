#ifndef C_FILE_STORE_SHIM_H
#define C_FILE_STORE_SHIM_H

// What SecureDictionaryFileStore needs from C: the kernel keyring's system calls (variadic
// syscall(2), which Swift cannot call; no libkeyutils needed), and scrypt, HKDF and
// AES-GCM by BoringSSL with every key in a buffer that is wiped.

#include <stddef.h>
#include <stdint.h>

// --- The kernel keyring (kernel_keyring.c). Each returns what the system call returns:
// -1 with errno set on failure.

/// The serial of this process's session keyring, without creating one: the login
/// session's (pam_keyinit), or else the user's default session keyring.
/// keyctl(KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0)
long sd_keyring_session(void);

/// add_key("user", description, payload, length, keyring): a new key, or the existing
/// one of that description in `keyring` updated. Returns its serial.
long sd_keyring_add(const char *description, const void *payload, size_t length, int32_t keyring);

/// keyctl(KEYCTL_SEARCH, keyring, "user", description, 0): the serial of a key this process
/// possesses, found from `keyring` down.
long sd_keyring_search(int32_t keyring, const char *description);

/// keyctl(KEYCTL_READ, key, buffer, length): the payload's full length (copies at most
/// `length` bytes). For a keyring, the payload is the serials (int32_t) of its keys.
long sd_keyring_read(int32_t key, void *buffer, size_t length);

/// keyctl(KEYCTL_DESCRIBE, key, buffer, length): "type;uid;gid;perm;description" and a NUL;
/// returns the full length (copies at most `length` bytes).
long sd_keyring_describe(int32_t key, char *buffer, size_t length);

/// keyctl(KEYCTL_SET_TIMEOUT, key, seconds): the key expires `seconds` from now (0: never).
long sd_keyring_set_timeout(int32_t key, unsigned int seconds);

/// keyctl(KEYCTL_REVOKE, key): the key can no longer be read, by anyone.
long sd_keyring_revoke(int32_t key);

/// keyctl(KEYCTL_UNLINK, key, keyring).
long sd_keyring_unlink(int32_t key, int32_t keyring);

// --- The files' encryption (crypto.c): scrypt, and AES-256-GCM under HKDF-SHA256 keys,
// nothing left.

/// scrypt (RFC 7914) of `password` with `salt`, N = 2^log2_n, r, p, written to `out`
/// (which the caller owns and wipes). BoringSSL's EVP_PBE_scrypt, from the copy that
/// swift-crypto links in (CCryptoBoringSSL): swift-crypto's own `KDF.Scrypt` returns the
/// key through a `Data` it frees unwiped. Returns 1 on success, 0 on failure (parameters
/// out of bounds, or more than `max_memory` bytes needed).
int sd_scrypt(
    const uint8_t *password, size_t password_length, const uint8_t *salt, size_t salt_length, unsigned int log2_n,
    unsigned int r, unsigned int p, size_t max_memory, uint8_t *out, size_t out_length);

/// HKDF-SHA256 of `secret` with `salt` and `info` into `out` (the caller wipes it).
/// Returns 1 on success.
int sd_hkdf_sha256(
    uint8_t *out, size_t out_length, const uint8_t *secret, size_t secret_length, const uint8_t *salt,
    size_t salt_length, const uint8_t *info, size_t info_length);

/// AES-256-GCM under HKDF-SHA256(master, salt, label), with the 12-byte `nonce` and `aad`
/// authenticated. A seal (`open` 0) of the plaintext `in` writes ciphertext and tag to `out`
/// (in_length + 16 bytes); an open (`open` 1) of ciphertext and tag `in` writes the plaintext
/// to `out` (in_length − 16 bytes, which the caller wipes). Returns 1 on success (an open:
/// when it authenticates).
int sd_file_crypt(
    int open, const uint8_t *master, size_t master_length, const uint8_t *salt, size_t salt_length,
    const uint8_t *label, size_t label_length, const uint8_t *nonce, const uint8_t *aad, size_t aad_length,
    const uint8_t *in, size_t in_length, uint8_t *out);

/// Wipes 32 KiB of the stack below the caller: what the calls it just made left there.
void sd_scrub_stack(void);

#endif
