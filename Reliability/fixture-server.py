#!/usr/bin/python3
"""Raw Secret Service access for sd-reliability, many calls over one D-Bus connection.

scripts/keyring-fixture.py costs one python start and one session per call (~50 ms);
the hostile-blob scenario makes hundreds of calls, so this server imports that script's
SecretService class and answers one JSON request per line on stdin with one JSON line:

  {"op": "plant", "attrs": {...}, "label": "...", "file": "/path", "replace": true,
   "alias": "default" | "collection": "/org/.../collection/x"}
  {"op": "sha256" | "count" | "delete", "attrs": {...}}
  {"op": "read", "attrs": {...}, "file": "/path"}          # raw secret into file
  {"op": "create_collection", "label": "...", "password": ""}   # gnome-keyring private API
  {"op": "set_alias", "alias": "...", "collection": "/org/..."}
  {"op": "alias", "alias": "..."}
  {"op": "reset"}                                          # reconnect (after a restart)

Replies: {"ok": true, "value": ...} or {"ok": false, "code": N, "error": "..."}, codes as
keyring-fixture.py's exit codes (3 none, 4 several, 5 locked, 6 no service, 1 other).
Test-only: like keyring-fixture.py, it uses a plain (unencrypted) transport session.
"""

import hashlib
import importlib.util
import json
import sys

import dbus

spec = importlib.util.spec_from_file_location("keyring_fixture", sys.argv[1])
kf = importlib.util.module_from_spec(spec)
spec.loader.exec_module(kf)

RECONNECT_ERRORS = (
    "org.freedesktop.DBus.Error.ServiceUnknown",
    "org.freedesktop.DBus.Error.NameHasNoOwner",
    "org.freedesktop.DBus.Error.NoReply",
    "org.freedesktop.DBus.Error.Disconnected",
    "org.freedesktop.DBus.Error.UnknownObject",
    "org.freedesktop.DBus.Error.UnknownMethod",
    "org.freedesktop.Secret.Error.NoSession",
)

service = None


def svc():
    global service
    if service is None:
        service = kf.SecretService(60.0)
    return service


def collection_of(s, request):
    return request.get("collection") or s.alias(request.get("alias", "default"))


def op_plant(s, request):
    with open(request["file"], "rb") as handle:
        data = handle.read()
    if len(data) > kf.DBUS_MAX_ARRAY:
        raise kf.Failure(kf.EXIT_ERROR, f"{len(data)} bytes: over D-Bus's 64 MiB array limit")
    collection = collection_of(s, request)
    properties = {
        kf.ITEM_IFACE + ".Label": dbus.String(request["label"]),
        kf.ITEM_IFACE + ".Attributes": dbus.Dictionary(request["attrs"], signature="ss"),
    }
    secret = dbus.Struct(
        (s.session, dbus.ByteArray(b""), dbus.ByteArray(data),
         dbus.String(request.get("content_type", "application/octet-stream"))),
        signature="oayays",
    )
    item, prompt = s.call(
        s.obj(collection), kf.COLLECTION_IFACE, "CreateItem",
        dbus.Dictionary(properties, signature="sv"), secret, dbus.Boolean(request.get("replace", True)),
    )
    if str(prompt) != "/":
        raise kf.Failure(kf.EXIT_LOCKED, "CreateItem wants a prompt: collection locked")
    return str(item)


def op_sha256(s, request):
    return hashlib.sha256(s.secret(s.single(request["attrs"]))).hexdigest()


def op_read(s, request):
    data = s.secret(s.single(request["attrs"]))
    with open(request["file"], "wb") as handle:
        handle.write(data)
    return len(data)


def op_count(s, request):
    unlocked, locked = s.search(request["attrs"])
    return len(unlocked) + len(locked)


def op_delete(s, request):
    unlocked, locked = s.search(request["attrs"])
    for path in unlocked:
        s.call(s.obj(path), kf.ITEM_IFACE, "Delete")
    if locked:
        raise kf.Failure(kf.EXIT_LOCKED, "locked items were not deleted")
    return len(unlocked)


def op_create_collection(s, request):
    properties = dbus.Dictionary(
        {"org.freedesktop.Secret.Collection.Label": dbus.String(request["label"])}, signature="sv")
    master = dbus.Struct(
        (s.session, dbus.ByteArray(b""), dbus.ByteArray(request.get("password", "").encode()),
         dbus.String("text/plain")),
        signature="oayays",
    )
    path = s.call(s.service, kf.INTERNAL_IFACE, "CreateWithMasterPassword", properties, master)
    return str(path)


def op_set_alias(s, request):
    s.call(s.service, kf.SERVICE_IFACE, "SetAlias", request["alias"], dbus.ObjectPath(request["collection"]))
    return True


def op_alias(s, request):
    return s.alias(request["alias"])


def op_locked(s, request):
    return bool(s.prop(collection_of(s, request), kf.COLLECTION_IFACE, "Locked"))


OPS = {
    "plant": op_plant, "sha256": op_sha256, "read": op_read, "count": op_count, "delete": op_delete,
    "create_collection": op_create_collection, "set_alias": op_set_alias, "alias": op_alias,
    "locked": op_locked,
}


def handle(request):
    global service
    if request["op"] == "reset":
        service = None
        return {"ok": True, "value": True}
    for attempt in (1, 2):
        try:
            return {"ok": True, "value": OPS[request["op"]](svc(), request)}
        except kf.Failure as failure:
            message = str(failure)
            service = None
            if attempt == 1 and any(name in message for name in RECONNECT_ERRORS):
                continue
            return {"ok": False, "code": failure.code, "error": message}
        except Exception as error:  # noqa: BLE001 - report anything, keep serving
            service = None
            return {"ok": False, "code": 1, "error": f"{type(error).__name__}: {error}"}
    return {"ok": False, "code": 1, "error": "unreachable"}


def main():
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            reply = handle(json.loads(line))
        except Exception as error:  # noqa: BLE001
            reply = {"ok": False, "code": 2, "error": f"bad request: {error}"}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
