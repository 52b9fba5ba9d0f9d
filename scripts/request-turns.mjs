// Requests start in the order they arrived, one per turn of the event loop (scripts/web-server.mjs).
//
// Why: libuv accepts one new connection per turn of the event loop, and a turn runs the handler of
// every request that arrived in it. When 64 keep-alive clients keep one server busy, a turn lasts
// 64 requests' work (about 200 ms), so the 64th client to connect waited 63 turns for its first
// answer: 5-7 s while every other request waited 0.2 s (docs/scale.md: the p99 of a 64-connection
// cell was its connections' first requests). Starting one request per turn keeps each turn one
// request long: connections are accepted as they come, and every request waits its place in one
// queue, first come, first served, whether its connection is new or not.
//
// The work of a request that awaits (a body being read, a job's log) runs when its I/O is ready, as
// before; what waits in the queue is only its start. A request whose client has gone while it
// waited is dropped unstarted.

/** `handler`, started in arrival order, one request per event-loop turn. */
export function inTurn(handler) {
  const queue = [];
  let head = 0;
  let scheduled = false;
  const next = () => {
    scheduled = false;
    while (head < queue.length) {
      const [req, res] = queue[head];
      queue[head++] = undefined;
      if (head > 1024 && head * 2 > queue.length) queue.splice(0, head), (head = 0);
      if (req.socket?.destroyed) continue; // the client left before its turn
      handler(req, res);
      break;
    }
    if (head < queue.length) {
      scheduled = true;
      setImmediate(next);
    }
  };
  return (req, res) => {
    queue.push([req, res]);
    if (!scheduled) {
      scheduled = true;
      setImmediate(next);
    }
  };
}
