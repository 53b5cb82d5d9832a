/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Scripts run by their SHA1 (EVALSHA, EVAL on NOSCRIPT); included by clusterpipe/clusterpipe.h
 * (which defines CP_API, cp_client and redisReply before it), not on its own.
 *
 * A cp_script is the caller's: made by cp_script_new, freed by cp_script_free, read-only in
 * between, so any number of threads and clients may share one. An append copies what it needs
 * (the body too, for the EVAL a NOSCRIPT asks for), so the script may be freed once the append
 * returned. The calls that send take the client's thread, as every call on a client does.
 * docs/api.md, "Scripts", says how they run.
 */
#ifndef CLUSTERPIPE_SCRIPT_PUBLIC_H
#define CLUSTERPIPE_SCRIPT_PUBLIC_H

/* The same declarations as clusterpipe.h's further down (C11 allows them twice). */
typedef struct cp_pipeline cp_pipeline;
typedef struct cp_response cp_response;
typedef void cp_callback(cp_client *c, const cp_response *r, void *privdata);

typedef struct cp_script cp_script;

/* A script of body[0..len), named by its SHA1 in hex as the server names it (computed here,
 * without OpenSSL). NULL when out of memory, or body is NULL while len > 0. */
CP_API cp_script *cp_script_new(const char *body, size_t len);
CP_API void cp_script_free(cp_script *s);

/* Its SHA1 in lower-case hex, 40 characters and a NUL; valid while s is. */
CP_API const char *cp_script_sha(const cp_script *s);

/* Appends the script with numkeys keys and then the other arguments, as EVAL takes them:
 * argv[0..numkeys) are the keys (they route it), argv[numkeys..argc) the arguments (argvlen NULL:
 * strlen of each). It goes as EVALSHA; a NOSCRIPT answer (the node lacks the script: a promoted
 * replica, a new shard, SCRIPT FLUSH) is never the outcome the first time: the same command goes
 * again as EVAL with the body to the node that answered, once, and its reply is the outcome. The
 * slot's later commands wait until the EVALSHA has been answered, so that they see what the
 * script did. Inside MULTI ... EXEC it goes as EVAL from the start (a NOSCRIPT would show only in
 * EXEC's reply, after the rest of the unit ran). 0, CP_EINVAL (numkeys outside 0..argc, argc < 0,
 * no script, or the pipeline executed), CP_ENOMEM. */
CP_API int cp_append_script(cp_pipeline *p, const cp_script *s, int numkeys, int argc,
                            const char **argv, const size_t *argvlen);

/* cp_command_argv for a script: its reply (free with cp_reply_free), or NULL with the client's
 * err/errstr set. Blocking clients only. */
CP_API redisReply *cp_command_script(cp_client *c, const cp_script *s, int numkeys, int argc,
                                     const char **argv, const size_t *argvlen);

/* cp_async_command_argv for a script: cb gets the outcome (flags: CP_CMD_IDEMPOTENT or 0). 0 or
 * the CP_E* refusal, as cp_async_command_argv returns it. */
CP_API int cp_async_command_script(cp_client *c, cp_callback *cb, void *privdata, unsigned flags,
                                   const cp_script *s, int numkeys, int argc, const char **argv,
                                   const size_t *argvlen);

/* What the scripts of client c have done. */
typedef struct cp_script_stats {
    uint64_t noscript; /* NOSCRIPT answers followed by the EVAL (each at most once per command) */
} cp_script_stats;
CP_API void cp_get_script_stats(const cp_client *c, cp_script_stats *out);

#endif
