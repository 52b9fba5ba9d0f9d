// How the web server answers a request whose body is still arriving: a refusal decided from the
// headers (401, 403, 413 by Content-Length, 429), a 413 while streaming, a 408 (scripts/web-server.mjs,
// scripts/api-dispatch.mjs, scripts/graceful-stop.mjs).
//
// Why: most HTTP clients (Python's http.client and requests, the TurnLens Python client, curl
// without Expect) write the whole body before they read anything. A server that answers and then
// neither reads nor closes leaves them blocked on a full socket until their timeout; one that
// closes at once with body bytes unread makes the kernel reset the connection, and the reset
// discards the answer the client has not read yet. So the answer goes out whole with
// `Connection: close`, the rest of the body is read and dropped, and the connection is closed once
// the body has ended (the client then reads the answer and the end of the connection), or at
// `deadline` whatever has arrived by then: a body that never ends cannot hold a connection.

/**
 * Sends `status`, `headers` and `body` (a Buffer or Uint8Array) for `req`. A request whose body has
 * all arrived gets an ordinary answer; otherwise the answer says `Connection: close`, the rest of
 * the body is discarded and the connection is closed when it ends, or at `deadline`
 * (performance.now() milliseconds). The caller must have stopped listening to `req`'s data.
 */
export function answer(req, res, status, headers, body, deadline) {
  const length = String(body.byteLength);
  if (req.complete) {
    res.writeHead(status, { ...headers, "content-length": length }).end(body);
    return;
  }
  res.writeHead(status, { ...headers, "content-length": length, connection: "close" });
  if (body.byteLength) res.write(body);
  else res.flushHeaders();
  // res.end() lets Node close the socket (the answer says `Connection: close`): after the body ended,
  // nothing is left unread and the close is clean
  const close = () => {
    clearTimeout(timer);
    if (!res.writableEnded) res.end();
  };
  const timer = setTimeout(close, Math.max(0, deadline - performance.now()));
  req.once("end", close);
  res.once("close", () => clearTimeout(timer));
  req.on("error", () => {}); // a client gone mid-body: the socket's close ends the rest
  req.resume();
}
