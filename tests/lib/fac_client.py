# A facilitator's client of seatd's facilitator socket, as seat-web speaks it (the control
# protocol's JSON lines, docs/protocol-control.md), in Python's own sockets: the suites run
# it as nobody, a member of the suite's facilitator_group, so it reaches seatd exactly as a
# dashboard does. The suites copy it beside their work files (nobody may not read the tree).
#   fac_client.py reset SOCKET SEAT FACILITATOR
#   fac_client.py provision SOCKET IMAGE PARTICIPANT FACILITATOR   (one line: the seat or the error)
#   fac_client.py watch SOCKET SEAT | audit SOCKET SEAT | metrics SOCKET
import base64, json, socket, sys


def conn(path):
    s = socket.socket(socket.AF_UNIX); s.settimeout(900); s.connect(path); f = s.makefile("rwb")
    call(f, 1, "hello", {"version": 1})
    return f


def send(f, i, method, params):
    f.write((json.dumps({"id": i, "method": method, "params": params}) + "\n").encode()); f.flush()


def call(f, i, method, params):
    send(f, i, method, params)
    while True:
        m = json.loads(f.readline())
        if m.get("id") == i and m["type"] in ("result", "error"):
            return m


def main():
    mode, path = sys.argv[1], sys.argv[2]
    f = conn(path)
    if mode == "reset":
        m = call(f, 2, "seat.reset", {"seat": sys.argv[3], "facilitator": sys.argv[4]})
        print("new participant token: " + m["result"]["token"] if m["type"] == "result" else "error " + json.dumps(m["error"]))
    elif mode == "provision":  # "seat ID from_pool" or "error CODE MESSAGE"; the token is not printed
        m = call(f, 2, "seat.provision", {"image": sys.argv[3], "participant": sys.argv[4], "facilitator": sys.argv[5]})
        if m["type"] == "result":
            s = m["result"]["seats"][0]
            print("seat", s["id"], bool(s.get("from_pool")))
        else:
            print("error", m["error"].get("code"), m["error"].get("message"))
    elif mode == "watch":  # one line per snapshot on stdout: the seat's state and generation
        send(f, 2, "events.subscribe", {})
        out = sys.stdout
        while True:
            m = json.loads(f.readline())
            if m["type"] != "snapshot": print("ended", m, file=out, flush=True); break
            seat = [x for x in m["snapshot"]["seats"] if x["id"] == sys.argv[3]]
            print(*((seat[0]["state"], seat[0]["generation"]) if seat else ("gone", "-")), m["snapshot"]["time"], file=out, flush=True)
    elif mode == "audit":  # the record types of the running session's log, read in small pieces
        data, off = b"", 0
        while True:
            r = call(f, 3, "seat.audit", {"seat": sys.argv[3], "offset": off, "max_bytes": 4096})["result"]
            data += base64.b64decode(r["data"]); off = r["offset"]
            if r["eof"]: break
        print(" ".join(json.loads(l)["type"] for l in data.decode().splitlines()))
    elif mode == "metrics":
        r = call(f, 2, "metrics", {})["result"]
        print("resets", r["latency"]["reset"]["count"], "provisions", r["latency"]["provision"]["count"],
              "ready", r["seats_by_state"]["ready"], "calls", r["calls_total"])
    else:
        sys.exit("fac_client.py: unknown mode " + mode)


if __name__ == "__main__":
    main()
