#ifndef CRAWLIBSECRET_SHIM_H
#define CRAWLIBSECRET_SHIM_H
/* libsecret for the benchmark's raw baselines (the stable password API), and the
   dbus-path API (marked unstable by libsecret) for timing single D-Bus round trips
   such as ReadAlias, as the library makes them. */
#define SECRET_API_SUBJECT_TO_CHANGE 1
#include <libsecret/secret.h>
#endif
