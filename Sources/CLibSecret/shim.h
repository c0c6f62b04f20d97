#ifndef CLIBSECRET_SHIM_H
#define CLIBSECRET_SHIM_H
/* The dbus-path API (secret-paths.h) is marked unstable by libsecret; it has not changed
   since 0.11 and is what lets SecureDictionary avoid unlock prompts and extra round trips. */
#define SECRET_API_SUBJECT_TO_CHANGE 1
#include <libsecret/secret.h>
#endif
