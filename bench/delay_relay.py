#!/usr/bin/env python3
"""delay_relay: a TCP relay that holds every byte a set time each way, for
benchmarks of a server at a distance (bench/far.sh) where the kernel has no
netem. Standard library only.

    delay_relay.py LISTEN_PORT TARGET_PORT RTT_MS [--port-file FILE]

Listens on 127.0.0.1:LISTEN_PORT (0: a port the kernel picks, written to
FILE once listening), connects each client to 127.0.0.1:TARGET_PORT, and
hands on what either side sends RTT_MS / 2 after it arrived: a round trip
through the relay costs RTT_MS more. Bytes wait in order; at most 64 MiB a
direction are held (then the relay stops reading that side until some are
sent), so a slow reader slows its writer as a real network does.
"""

import asyncio
import collections
import sys
import time

HOLD_MAX = 64 << 20


async def pump(reader, writer, half_s):
    """Copy reader to writer, each chunk sent half_s after it was read."""
    queue = collections.deque()
    held = 0
    more = asyncio.Event()   # something queued, or the end
    room = asyncio.Event()   # held dropped under HOLD_MAX
    room.set()
    done = False

    async def read_side():
        nonlocal held, done
        try:
            while True:
                await room.wait()
                data = await reader.read(1 << 20)
                if not data:
                    break
                queue.append((time.monotonic() + half_s, data))
                held += len(data)
                if held >= HOLD_MAX:
                    room.clear()
                more.set()
        except (ConnectionError, OSError):
            pass
        done = True
        more.set()

    async def write_side():
        nonlocal held
        try:
            while True:
                if not queue:
                    if done:
                        break
                    more.clear()
                    await more.wait()
                    continue
                due, data = queue[0]
                wait = due - time.monotonic()
                if wait > 0:
                    await asyncio.sleep(wait)
                queue.popleft()
                writer.write(data)
                await writer.drain()
                held -= len(data)
                if held < HOLD_MAX:
                    room.set()
        except (ConnectionError, OSError):
            pass
        try:
            if writer.can_write_eof():
                writer.write_eof()
        except (ConnectionError, OSError):
            pass

    await asyncio.gather(read_side(), write_side())


async def serve(listen_port, target_port, rtt_ms, port_file):
    half_s = rtt_ms / 2000.0

    async def client(creader, cwriter):
        try:
            ureader, uwriter = await asyncio.open_connection(
                "127.0.0.1", target_port, limit=4 << 20)
        except OSError:
            cwriter.close()
            return
        await asyncio.gather(pump(creader, uwriter, half_s),
                             pump(ureader, cwriter, half_s))
        for w in (cwriter, uwriter):
            try:
                w.close()
            except OSError:
                pass

    srv = await asyncio.start_server(client, "127.0.0.1", listen_port,
                                     limit=4 << 20, backlog=256)
    port = srv.sockets[0].getsockname()[1]
    if port_file:
        with open(port_file + ".tmp", "w") as f:
            f.write("%d\n" % port)
        import os
        os.rename(port_file + ".tmp", port_file)
    async with srv:
        await srv.serve_forever()


def main(argv):
    if len(argv) not in (3, 5) or (len(argv) == 5 and argv[3] != "--port-file"):
        print(__doc__, file=sys.stderr)
        return 2
    port_file = argv[4] if len(argv) == 5 else None
    asyncio.run(serve(int(argv[0]), int(argv[1]), float(argv[2]), port_file))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
