// scrypt into the caller's buffer, by BoringSSL.
#include "CFileStoreShim.h"

// BoringSSL's EVP_PBE_scrypt (include/openssl/evp.h), under the symbol prefix swift-crypto
// gives its copy. Declared here because CCryptoBoringSSL is not a product of swift-crypto;
// the package links it in through Crypto, a dependency of this target.
int CCryptoBoringSSL_EVP_PBE_scrypt(
    const char *password, size_t password_len, const uint8_t *salt, size_t salt_len, uint64_t N, uint64_t r,
    uint64_t p, size_t max_mem, uint8_t *out_key, size_t key_len);

int sd_scrypt(
    const uint8_t *password, size_t password_length, const uint8_t *salt, size_t salt_length, unsigned int log2_n,
    unsigned int r, unsigned int p, size_t max_memory, uint8_t *out, size_t out_length) {
    if (log2_n == 0 || log2_n > 30) return 0;
    static const char empty = 0;
    int done = CCryptoBoringSSL_EVP_PBE_scrypt(
        password_length > 0 ? (const char *)password : &empty, password_length, salt, salt_length,
        (uint64_t)1 << log2_n, r, p, max_memory, out, out_length);
    sd_scrub_stack();  // PBKDF2's last HMAC blocks
    return done;
}
