#!/usr/bin/env python3
"""Scenarios against a server's gRPC endpoint with Python's grpcio, for the Swift test
GRPCEndpointTests, which runs them and checks the one JSON object each prints. Stubs
come from proto/ at run time, as in grpc_client.py.

Usage: grpc_scenarios.py --target HOST:PORT --token-file FILE --proto DIR SCENARIO [N]
  wait        one GetProfile waiting for min-sequence 999999 (a 60 s deadline): its
              status code, message and seconds taken (the test stops the server meanwhile)
  cancels N   on one channel, a Subscribe held open while N more are opened and each
              cancelled after its first event; then whether the held one still gets a
              new event and a unary call still works on the channel
"""
import argparse
import json
import os
import queue
import sys
import tempfile
import threading
import time

import grpc

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from grpc_client import generate  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--target", required=True)
    parser.add_argument("--token-file", required=True)
    parser.add_argument("--proto", required=True)
    parser.add_argument("scenario", choices=["wait", "cancels"])
    parser.add_argument("count", nargs="?", type=int, default=300)
    args = parser.parse_args()
    generate(args.proto, tempfile.mkdtemp(prefix="chordstore-grpc-py-"))
    from chordstore.v1 import rpc_pb2, rpc_pb2_grpc

    token = open(args.token_file).read().strip()
    metadata = [("authorization", f"Bearer {token}"), ("session", "python-scenarios")]
    channel = grpc.insecure_channel(args.target)
    stub = rpc_pb2_grpc.ChordStoreStub(channel)
    result = {}

    if args.scenario == "wait":
        started = time.monotonic()
        try:
            stub.GetProfile(rpc_pb2.GetProfileRequest(), metadata=metadata + [("min-sequence", "999999")], timeout=60)
            result["code"] = "OK"
        except grpc.RpcError as error:
            result["code"] = error.code().name
            result["message"] = error.details()
        result["seconds"] = time.monotonic() - started
    else:
        stub.AddChordset(rpc_pb2.AddChordsetRequest(title="first"), metadata=metadata, timeout=10)
        held = stub.Subscribe(rpc_pb2.SubscribeRequest(from_sequence=1), metadata=metadata)
        arrived = queue.Queue()

        def read():
            try:
                for envelope in held:
                    arrived.put(envelope.sequence)
                arrived.put("ended")
            except grpc.RpcError as error:
                arrived.put(error.code().name)

        threading.Thread(target=read, daemon=True).start()
        arrived.get(timeout=10)  # event 1
        cancelled = 0
        started = time.monotonic()
        for _ in range(args.count):
            call = stub.Subscribe(rpc_pb2.SubscribeRequest(from_sequence=1), metadata=metadata)
            next(call)
            call.cancel()
            cancelled += 1
        result["cancelled"] = cancelled
        result["seconds"] = time.monotonic() - started
        added = stub.AddChordset(rpc_pb2.AddChordsetRequest(title="after"), metadata=metadata, timeout=10)
        result["unary_after"] = "OK"
        try:
            got = arrived.get(timeout=10)
        except queue.Empty:
            got = "nothing"
        result["held_stream_got"] = got if isinstance(got, str) else int(got)
        result["added_sequence"] = added.event.sequence
        held.cancel()
    print(json.dumps(result))


if __name__ == "__main__":
    main()
