/* SPDX-License-Identifier: BSD-3-Clause
 *
 * A scripted fake Redis node for deterministic fault tests. fake_node_start() binds 127.0.0.1 on a
 * free port and serves every client connection from one background thread (a poll loop), so a
 * test keeps its own thread for the client under test. Without rules the node is a tiny Redis:
 * PING, SET, GET, DEL, INCR, MGET, EXISTS, ASKING, AUTH, READONLY, READWRITE, QUIT and CLUSTER
 * SLOTS / SHARDS (answered with raw RESP the test sets). Rules, checked in the order added for
 * every received command, replace the normal answer with a scripted fault: a raw reply (MOVED,
 * ASK, TRYAGAIN, ...), a close, a stall, a partial reply then close, garbage bytes, or a reply
 * held back for a while (or until the test releases it).
 *
 * Ownership: the caller owns the fake_node and frees it with fake_node_stop(), which joins the
 * thread and closes every socket. Every string passed in (rule fields, payloads, passwords,
 * cluster replies) is copied; the caller keeps its own. All functions may be called from any
 * thread while the node runs (a mutex guards rules, configuration and the log); none blocks
 * except fake_node_start() and fake_node_stop(), which return within milliseconds.
 */
#ifndef CLUSTERPIPE_FAKENODE_H
#define CLUSTERPIPE_FAKENODE_H

#include <stddef.h>

typedef struct fake_node fake_node;

typedef enum fake_action {
    FAKE_REPLY,         /* send payload instead of the normal answer, keep serving */
    FAKE_CLOSE,         /* send nothing for this command, close (replies before it still go) */
    FAKE_STALL,         /* never answer this command or any later one on this connection; the
                           connection stays open (its input is still read, logged, discarded) */
    FAKE_PARTIAL_CLOSE, /* send payload (e.g. "$10\r\nabc"), then close */
    FAKE_GARBAGE,       /* send payload raw instead of the answer, keep serving */
    FAKE_DELAY          /* send payload (NULL: the normal answer) delay_ms after the command
                           came, or (delay_ms -1) once fake_node_release() is called; the
                           replies to later commands on the connection wait behind it, as
                           behind a slow command on a real server (commands are still read,
                           logged and answered, in order) */
} fake_action;

/* One scripted fault. A command matches when its name equals cmd (ASCII case-insensitive; NULL =
 * any command) and its first argument equals key (byte for byte; NULL = any, and a command
 * without arguments only matches key == NULL). The first `skip` matching commands are let
 * through (later rules and normal handling see them), then the rule fires for the next `times`
 * matching commands (-1 = forever; 0 is taken as 1 so a rule written without .times fires once),
 * then it is spent and matches nothing. The first rule that fires wins; a command no rule fires
 * on gets the normal answer. payload_len 0 means strlen(payload); payload may be NULL for
 * FAKE_CLOSE, FAKE_STALL and FAKE_DELAY. Close actions send FIN after the pending replies, never
 * RST. delay_ms is FAKE_DELAY's alone: > 0, or -1 for "until fake_node_release()". */
typedef struct fake_rule {
    const char *cmd;
    const char *key;
    int skip;
    int times;
    fake_action action;
    const char *payload;
    size_t payload_len;
    int delay_ms;
} fake_rule;

/* Starts a node on 127.0.0.1:<free port> with its serving thread. Returns NULL if the socket,
 * thread or memory cannot be had. Blocks only for the bind. Free with fake_node_stop(). */
fake_node *fake_node_start(void);

/* The TCP port the node listens on. */
int fake_node_port(const fake_node *node);

/* Stops the thread, closes the listener and every connection (clients see EOF) and frees the
 * node and everything it copied. NULL is a no-op. After it returns the port refuses
 * connections, which is how a test plays "node down". */
void fake_node_stop(fake_node *node);

/* Adds a rule after the existing ones; it applies from the next command the node parses (a
 * pipeline already received may be processed either side of the call). Everything *r points to
 * is copied. Returns the rule's id (0, 1, ... in order added) for fake_node_rule_fired(), or -1
 * on OOM, an unknown action, a NULL payload for an action that sends one, or a FAKE_DELAY whose
 * delay_ms is neither > 0 nor -1. */
int fake_node_rule(fake_node *node, const fake_rule *r);

/* Lets every reply held so far by a FAKE_DELAY rule with delay_ms -1 go (on every connection,
 * each still behind the replies before it); replies held later wait for the next call. The
 * serving thread sends them within milliseconds. */
void fake_node_release(fake_node *node);

/* How many times rule `id` has fired so far (skipped commands do not count); -1 if no such id. */
int fake_node_rule_fired(fake_node *node, int id);

/* Removes every rule (ids restart at 0). Commands already stalled stay stalled. */
void fake_node_clear_rules(fake_node *node);

/* Makes the node behave like Redis 7 with requirepass / an ACL user: every command except AUTH
 * and QUIT gets "-NOAUTH Authentication required." until the connection sends AUTH with the
 * right credentials; wrong ones get "-WRONGPASS invalid username-password pair or user is
 * disabled.". user NULL means "default" (accepts both `AUTH pass` and `AUTH default pass`).
 * pass NULL turns the requirement off again (AUTH then answers +OK to anything). Connections
 * already authenticated stay so. Returns 0, or -1 on OOM. */
int fake_node_require_password(fake_node *node, const char *user, const char *pass);

/* Sets the raw RESP answer to "CLUSTER <which>", which is "SLOTS" or "SHARDS" (any case); raw
 * NULL restores the default error (SHARDS: "-ERR unknown subcommand ...", as a Redis 6 node;
 * SLOTS: "-ERR This instance has cluster support disabled"). Returns 0, or -1 on OOM or an
 * unknown `which`. */
int fake_node_set_cluster_reply(fake_node *node, const char *which, const char *raw);

/* Commands received with this name (case-insensitive; NULL = all commands), counting those
 * answered by rules and those received on stalled connections. Every command is counted before
 * it is answered, so once a client has its reply (or its error) the count includes it. */
size_t fake_node_count(fake_node *node, const char *cmd);

/* Connections accepted so far (a connection that completed one round trip is always counted). */
int fake_node_connections(fake_node *node);

/* Number of entries in the command log (== fake_node_count(node, NULL) up to 1,000,000 entries;
 * later commands are counted but not logged). */
size_t fake_node_log_len(fake_node *node);

/* Copies the i-th received command (0-based, in arrival order over all connections) into buf as
 * its arguments joined by single spaces, e.g. "GET foo", NUL-terminated and truncated to fit
 * len (arguments longer than 64 bytes are cut and end in "..."). Returns the id of the
 * connection it came on (1, 2, ... in accept order), or -1 if there is no entry i. */
int fake_node_log(fake_node *node, size_t i, char *buf, size_t len);

/* Index of the first log entry at or after `from` whose text (as fake_node_log writes it) equals
 * line exactly; -1 if none. */
long fake_node_log_find(fake_node *node, size_t from, const char *line);

/* How many log entries equal `second` and were immediately preceded, on the same connection, by
 * an entry equal to `first`: fake_node_log_follows(n, "ASKING", "GET foo") >= 1 proves the client
 * sent ASKING right before GET foo on one connection. */
int fake_node_log_follows(fake_node *node, const char *first, const char *second);

/* Writes into buf a Redis 7 CLUSTER SLOTS reply for n masters: master i serves slots
 * start[i]..end[i] at 127.0.0.1:ports[i], with node id fake_node_id(ports[i]), no replicas.
 * Returns the reply's length (buf NUL-terminated), or -1 if it does not fit in len. Several
 * entries may share a port (one node serving several ranges). */
int fake_cluster_slots(char *buf, size_t len, int n, const int *start, const int *end,
                       const int *ports);

/* The same topology as a Redis 7 CLUSTER SHARDS reply: one shard per distinct port (ranges of
 * one port are grouped in its "slots", in the order given), each with one node: id, port, ip,
 * endpoint, role "master", replication-offset, health "online" (no "hostname": Redis sends it
 * only when cluster-announce-hostname is set). Returns the length, or -1 if it does not fit. */
int fake_cluster_shards(char *buf, size_t len, int n, const int *start, const int *end,
                        const int *ports);

/* The 40-character node id the two helpers above give the node on `port`: the port in decimal,
 * zero-padded to 40 digits. buf must hold 41 bytes. Returns buf. */
char *fake_node_id(char *buf, int port);

#endif
