// The file stores' encryption and scrypt, by the BoringSSL that swift-crypto links in, so that no key
// is left behind: every key goes into a buffer this file wipes, the AEAD context is one
// BoringSSL allocates and wipes when it frees it, and the stack these calls used is wiped
// before returning. (swift-crypto's AES.GCM keeps the context in a Swift object whose memory
// is freed without being wiped: the key schedule, whose first 32 bytes are the AES-256 key,
// was found in a core dump; its `KDF.Scrypt` returns the key in a `Data` freed unwiped;
// BoringSSL's HKDF leaves its last output block on the stack.)
#include "CFileStoreShim.h"

#include <string.h>

// From include/openssl/{aead,digest,evp,hkdf,mem}.h, under swift-crypto's symbol prefix,
// declared here because CCryptoBoringSSL is not a product of swift-crypto (the package links
// it in through Crypto, a dependency of this target); the types are opaque here.
struct evp_aead_st;
struct evp_aead_ctx_st;
struct env_md_st;
const struct evp_aead_st *CCryptoBoringSSL_EVP_aead_aes_256_gcm(void);
struct evp_aead_ctx_st *CCryptoBoringSSL_EVP_AEAD_CTX_new(
    const struct evp_aead_st *aead, const uint8_t *key, size_t key_len, size_t tag_len);
void CCryptoBoringSSL_EVP_AEAD_CTX_free(struct evp_aead_ctx_st *ctx);
int CCryptoBoringSSL_EVP_AEAD_CTX_seal(
    const struct evp_aead_ctx_st *ctx, uint8_t *out, size_t *out_len, size_t max_out_len, const uint8_t *nonce,
    size_t nonce_len, const uint8_t *in, size_t in_len, const uint8_t *ad, size_t ad_len);
int CCryptoBoringSSL_EVP_AEAD_CTX_open(
    const struct evp_aead_ctx_st *ctx, uint8_t *out, size_t *out_len, size_t max_out_len, const uint8_t *nonce,
    size_t nonce_len, const uint8_t *in, size_t in_len, const uint8_t *ad, size_t ad_len);
const struct env_md_st *CCryptoBoringSSL_EVP_sha256(void);
int CCryptoBoringSSL_HKDF(
    uint8_t *out_key, size_t out_len, const struct env_md_st *digest, const uint8_t *secret, size_t secret_len,
    const uint8_t *salt, size_t salt_len, const uint8_t *info, size_t info_len);
void CCryptoBoringSSL_OPENSSL_cleanse(void *ptr, size_t len);
void CCryptoBoringSSL_ERR_clear_error(void);
int CCryptoBoringSSL_EVP_PBE_scrypt(
    const char *password, size_t password_len, const uint8_t *salt, size_t salt_len, uint64_t N, uint64_t r,
    uint64_t p, size_t max_mem, uint8_t *out_key, size_t key_len);

// Wipes 32 KiB of the stack below the caller's frame: what the calls it made just left there.
static void sd_scrub_stack(void) {
    volatile uint8_t area[32768];
    CCryptoBoringSSL_OPENSSL_cleanse((void *)area, sizeof area);
}

int sd_hkdf_sha256(
    uint8_t *out, size_t out_length, const uint8_t *secret, size_t secret_length, const uint8_t *salt,
    size_t salt_length, const uint8_t *info, size_t info_length) {
    int done = CCryptoBoringSSL_HKDF(
        out, out_length, CCryptoBoringSSL_EVP_sha256(), secret, secret_length, salt, salt_length, info, info_length);
    if (!done) CCryptoBoringSSL_ERR_clear_error();
    sd_scrub_stack();
    return done;
}

int sd_file_crypt(
    int open, const uint8_t *master, size_t master_length, const uint8_t *salt, size_t salt_length,
    const uint8_t *label, size_t label_length, const uint8_t *nonce, const uint8_t *aad, size_t aad_length,
    const uint8_t *in, size_t in_length, uint8_t *out) {
    if (open && in_length < 16) return 0;
    size_t wanted = open ? in_length - 16 : in_length + 16;
    size_t written = 0;
    uint8_t key[32];
    int done = 0;
    if (CCryptoBoringSSL_HKDF(
            key, sizeof key, CCryptoBoringSSL_EVP_sha256(), master, master_length, salt, salt_length, label,
            label_length)) {
        struct evp_aead_ctx_st *context =
            CCryptoBoringSSL_EVP_AEAD_CTX_new(CCryptoBoringSSL_EVP_aead_aes_256_gcm(), key, sizeof key, 16);
        if (context != NULL) {
            done = open ? CCryptoBoringSSL_EVP_AEAD_CTX_open(
                              context, out, &written, wanted, nonce, 12, in, in_length, aad, aad_length)
                        : CCryptoBoringSSL_EVP_AEAD_CTX_seal(
                              context, out, &written, wanted, nonce, 12, in, in_length, aad, aad_length);
            CCryptoBoringSSL_EVP_AEAD_CTX_free(context);
        }
    }
    CCryptoBoringSSL_OPENSSL_cleanse(key, sizeof key);
    if (!done) CCryptoBoringSSL_ERR_clear_error();
    sd_scrub_stack();
    return done && written == wanted;
}

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
