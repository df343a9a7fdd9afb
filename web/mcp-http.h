/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* MCP over Streamable HTTP (revision 2025-11-25) at /mcp/SEAT, for remote agents
 * (docs/mcp.md). The seat's token is the bearer credential, asked of seatd on every POST
 * as the login is; each session (Mcp-Session-Id) is one `seatctl mcp SEAT` child
 * (mcp-child.c) that seat-web bridges: a POSTed request goes to its stdin, and its
 * response and the progress notifications for it come back as that POST's
 * text/event-stream. */

#include "web.h"

McpTable *mcp_table_new(Web *w, struct lws_context *ctx);
/* Ends every session (children killed); the connections are left to libwebsockets. */
void mcp_table_free(McpTable *t);

/* The request's headers are in (route WEB_ROUTE_MCP): checks them, then waits for the
 * body or answers. Returns 0, or -1 to close the connection. */
int mcp_http_request(struct lws *wsi, Web *w, Conn *c);
int mcp_http_body(Conn *c, const void *in, size_t len);
int mcp_http_body_done(struct lws *wsi, Web *w, Conn *c);
/* seatd answered the POST's seat.status. */
int mcp_http_finish(struct lws *wsi, Web *w, Conn *c, Job *job);
/* seatd answered seat-web's periodic check of a session: a reset or released seat ends
 * it even when its client sends nothing more. */
void mcp_http_checked(Web *w, Job *job);
/* The connection may write: the next bytes of its event stream. */
int mcp_http_writeable(struct lws *wsi, Web *w, Conn *c);
void mcp_http_closed(Web *w, Conn *c);

/* The protocol of the children's stdout, adopted into the event loop. */
int mcp_child_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in, size_t len);
