#ifndef SIDECAR_COPENSSL_SHIM_H
#define SIDECAR_COPENSSL_SHIM_H
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <openssl/hmac.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ecdsa.h>
#include <openssl/bn.h>
#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/core_names.h>
#include <openssl/param_build.h>

/* Macros Swift cannot import. */
static inline EVP_PKEY *sidecar_generate_p256(void) { return EVP_EC_gen("P-256"); }
static inline int sidecar_public_key_selection(void) { return EVP_PKEY_PUBLIC_KEY; }
#endif
