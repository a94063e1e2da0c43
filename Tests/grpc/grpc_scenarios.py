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
  refusals F  each call of the JSON file F ([{"method", "request", "metadata"}]; the
              token of --token-file unless the metadata names another, "" for none):
              its status code and the reason of its google.rpc.ErrorInfo
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
    parser.add_argument("scenario", choices=["wait", "cancels", "refusals"])
    parser.add_argument("count", nargs="?", default="300")
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
    elif args.scenario == "refusals":
        result["results"] = refusals(args, channel, token)
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
        for _ in range(int(args.count)):
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


def refusals(args, channel, token):
    """Each call of the file: [code name, reason] ("OK" and "" when it succeeds)."""
    from google.protobuf import json_format
    from google.rpc import error_details_pb2, status_pb2  # compiled by generate()
    from chordstore.v1 import rpc_pb2

    service = rpc_pb2.DESCRIPTOR.services_by_name["ChordStore"]
    results = []
    for case in json.load(open(args.count)):
        method = service.methods_by_name[case["method"]]
        request = json_format.ParseDict(case.get("request", {}), message_class(method.input_type)())
        reply = message_class(method.output_type)
        metadata = dict(case.get("metadata", {}))
        secret = metadata.pop("token", token)
        pairs = list(metadata.items()) + ([("authorization", f"Bearer {secret}")] if secret else [])
        path = f"/chordstore.v1.ChordStore/{method.name}"
        serialize, deserialize = (lambda message: message.SerializeToString()), reply.FromString
        try:
            if method.server_streaming:
                call = channel.unary_stream(path, request_serializer=serialize, response_deserializer=deserialize)(request, metadata=pairs, timeout=10)
                next(call)
                call.cancel()
            else:
                channel.unary_unary(path, request_serializer=serialize, response_deserializer=deserialize)(request, metadata=pairs, timeout=10)
            results.append(["OK", ""])
        except grpc.RpcError as error:
            reason = ""
            for key, value in error.trailing_metadata() or ():
                if key == "grpc-status-details-bin":
                    status = status_pb2.Status.FromString(value)
                    for detail in status.details:
                        info = error_details_pb2.ErrorInfo()
                        if detail.Unpack(info):
                            reason = info.reason
            results.append([error.code().name, reason])
    return results


def message_class(descriptor):
    from google.protobuf import message_factory
    return message_factory.GetMessageClass(descriptor)


if __name__ == "__main__":
    main()
