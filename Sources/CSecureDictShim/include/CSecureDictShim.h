#ifndef CSECUREDICTSHIM_H
#define CSECUREDICTSHIM_H
/* What the secure-dict tool needs from C and Swift cannot call: variadic system calls. */

/* prctl(PR_SET_CHILD_SUBREAPER, 1): this process's orphaned descendants become its children
   instead of init's, so that `secure-dict keyring run` finds every process its command left,
   whatever its environment. Returns 0, or -1 with errno set. */
int sd_cli_become_child_subreaper(void);

#endif
