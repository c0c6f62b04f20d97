#!/usr/bin/python3
"""Test fixture: plant, read, list and delete Secret Service items directly.

It talks to org.freedesktop.secrets over D-Bus (python3-dbus), not through
libsecret or secret-tool, so tests can store blobs the library did not write:
any bytes (NUL, non-UTF-8, megabytes). secret-tool truncates stdin at 8 KiB
and needs UTF-8, which is why this exists. Test-only: it uses a "plain"
(unencrypted) transport session.

Run it inside scripts/with-private-keyring. Examples:

  keyring-fixture.py plant --attr service=app.__SecureDictionary__ \\
      --attr application=app --attr dictionary= --label app.__SecureDictionary__ \\
      --file blob.bplist
  keyring-fixture.py read --attr service=app.__SecureDictionary__ > out.bin
  keyring-fixture.py list --attr application=app
  keyring-fixture.py sha256 --attr service=app.__SecureDictionary__
  keyring-fixture.py delete --attr application=app
  keyring-fixture.py lock          # lock the default collection
  keyring-fixture.py unlock        # unlock it with $SD_TEST_KEYRING_PASSWORD
  keyring-fixture.py create-collection --label scratch   # password-less (gnome-keyring)
  keyring-fixture.py set-alias default /org/freedesktop/secrets/collection/scratch
  keyring-fixture.py hold-lock --app app --name tokens   # the writer lock, until stdin closes
  sandbox-run --app-id APP -- keyring-fixture.py portal-secret  # that app's portal secret (hex)

Attribute matching is exact (Service.SearchItems): every given attribute
must be equal, other attributes of the item may be anything. Note that
gnome-keyring adds xdg:schema=org.freedesktop.Secret.Generic to an item
planted without an xdg:schema once it reloads the keyring (unlock, restart).

Size: up to 2^26 bytes (64 MiB, D-Bus's array limit) per secret; read uses
Item.GetSecret, which carries that much (Service.GetSecrets, which libsecret
uses, stops about 112 bytes short of it: gnome-keyring then drops off the bus).

Exit codes: 0 success, 1 D-Bus or other error, 2 usage, 3 no matching item,
4 several matching items, 5 locked (item or collection), 6 no Secret Service
on the bus.
"""

import os
import sys

# python3-dbus is a Debian package: it exists for /usr/bin/python3 only, not
# for a pyenv or venv python3 that may come first on PATH.
try:
    import dbus
    import dbus.mainloop.glib
    from gi.repository import GLib
except ImportError:
    if os.path.realpath(sys.executable) != os.path.realpath("/usr/bin/python3") and os.path.exists(
        "/usr/bin/python3"
    ):
        os.execv("/usr/bin/python3", ["/usr/bin/python3", *sys.argv])
    sys.stderr.write("keyring-fixture: python3-dbus is missing; run scripts/install-system-deps\n")
    sys.exit(1)

import argparse
import hashlib
import json

BUS_NAME = "org.freedesktop.secrets"
SERVICE_PATH = "/org/freedesktop/secrets"
SERVICE_IFACE = "org.freedesktop.Secret.Service"
COLLECTION_IFACE = "org.freedesktop.Secret.Collection"
ITEM_IFACE = "org.freedesktop.Secret.Item"
PROMPT_IFACE = "org.freedesktop.Secret.Prompt"
# Attributes KeePassXC adds to every item it stores.
KEEPASSXC_ATTRIBUTES = {"Title", "URL", "UserName", "Notes", "Path", "Uuid", "FDO_SECRETS_CONTENT_TYPE"}
INTERNAL_IFACE = "org.gnome.keyring.InternalUnsupportedGuiltRiddenInterface"
PROPS_IFACE = "org.freedesktop.DBus.Properties"
NO_SERVICE_ERRORS = {
    "org.freedesktop.DBus.Error.ServiceUnknown",
    "org.freedesktop.DBus.Error.NameHasNoOwner",
}
# libdbus refuses any array longer than 64 MiB (DBUS_MAXIMUM_ARRAY_LENGTH),
# so no secret above this size can cross D-Bus at all.
DBUS_MAX_ARRAY = 64 * 1024 * 1024

EXIT_ERROR, EXIT_USAGE, EXIT_NONE, EXIT_SEVERAL, EXIT_LOCKED, EXIT_NO_SERVICE = 1, 2, 3, 4, 5, 6


class Failure(Exception):
    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


class SecretService:
    """One bus connection and one plain transport session for all calls."""

    def __init__(self, timeout):
        self.timeout = timeout
        # A GLib main loop, to wait for the Completed signal of a prompt (KeePassXC returns
        # one from every CreateItem and Item.Delete).
        dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
        try:
            self.bus = dbus.SessionBus()
        except dbus.DBusException as error:
            raise Failure(EXIT_NO_SERVICE, f"no D-Bus session bus: {error.get_dbus_message()}")
        self.service = self.obj(SERVICE_PATH)
        _, self.session = self.call(self.service, SERVICE_IFACE, "OpenSession", "plain", dbus.String("", variant_level=1))

    def obj(self, path):
        try:
            return self.bus.get_object(BUS_NAME, path, introspect=False)
        except dbus.DBusException as error:
            raise self.failure("connecting to " + BUS_NAME, error)

    def call(self, obj, iface, method, *args):
        try:
            return obj.get_dbus_method(method, iface)(*args, timeout=self.timeout, byte_arrays=True)
        except dbus.DBusException as error:
            raise self.failure(method, error)

    @staticmethod
    def failure(what, error):
        name = error.get_dbus_name()
        code = EXIT_NO_SERVICE if name in NO_SERVICE_ERRORS else EXIT_ERROR
        if name == "org.freedesktop.Secret.Error.IsLocked":
            code = EXIT_LOCKED
        return Failure(code, f"{what} failed: {name}: {error.get_dbus_message()}")

    def prop(self, path, iface, name):
        return self.call(self.obj(path), PROPS_IFACE, "Get", iface, name)

    def alias(self, name):
        path = str(self.call(self.service, SERVICE_IFACE, "ReadAlias", name))
        if path == "/":
            raise Failure(EXIT_NONE, f"the alias '{name}' names no collection")
        return path

    def search(self, attributes):
        unlocked, locked = self.call(
            self.service, SERVICE_IFACE, "SearchItems", dbus.Dictionary(attributes, signature="ss")
        )
        return [str(p) for p in unlocked], [str(p) for p in locked]

    def single(self, attributes):
        unlocked, locked = self.search(attributes)
        paths = unlocked + locked
        if not paths:
            raise Failure(EXIT_NONE, f"no item matches {json.dumps(attributes, sort_keys=True)}")
        if len(paths) > 1:
            raise Failure(EXIT_SEVERAL, f"{len(paths)} items match: {' '.join(sorted(paths))}")
        if locked:
            raise Failure(EXIT_LOCKED, f"{paths[0]} is locked")
        return paths[0]

    def prompt(self, path, what):
        """Runs the prompt at path (nothing for "/") and waits for its Completed signal.

        KeePassXC's prompts complete at once when nothing needs confirming; one that
        waits for a human is dismissed after the timeout (at most 10 s)."""
        if str(path) == "/":
            return
        loop = GLib.MainLoop()
        answer = {}

        def completed(dismissed, result):
            answer["dismissed"] = bool(dismissed)
            answer["result"] = result
            loop.quit()

        match = self.bus.add_signal_receiver(completed, "Completed", PROMPT_IFACE, None, str(path))
        try:
            self.obj(path).get_dbus_method("Prompt", PROMPT_IFACE)("", timeout=self.timeout)
        except dbus.DBusException as error:
            match.remove()
            # KeePassXC sometimes completes a CreateItem prompt and removes (or is removing) it before this
            # client calls it (the item is created): the caller checks the outcome itself.
            if error.get_dbus_name() in ("org.freedesktop.DBus.Error.UnknownObject", "org.freedesktop.DBus.Error.UnknownInterface"):
                return None
            raise self.failure("Prompt", error)
        GLib.timeout_add(int(min(self.timeout, 10) * 1000), loop.quit)
        if not answer:
            loop.run()
        match.remove()
        if not answer:
            self.call(self.obj(path), PROMPT_IFACE, "Dismiss")
            raise Failure(EXIT_LOCKED, f"{what}: its prompt ({path}) waits for a human")
        if answer["dismissed"]:
            raise Failure(EXIT_LOCKED, f"{what}: its prompt ({path}) was dismissed")
        return answer["result"]

    def secret(self, path):
        # Item.GetSecret, not Service.GetSecrets: GetSecrets wraps the secret in
        # one more array, so gnome-keyring cannot send one above 2^26 - ~112
        # bytes (it drops off the bus); GetSecret carries up to 2^26 bytes.
        value = self.call(self.obj(path), ITEM_IFACE, "GetSecret", self.session)
        return bytes(value[2])


def parse_attributes(pairs):
    attributes = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise Failure(EXIT_USAGE, f"--attr wants KEY=VALUE, got '{pair}'")
        attributes[key] = value
    return attributes


def cmd_plant(svc, args):
    attributes = parse_attributes(args.attr)
    if not attributes:
        raise Failure(EXIT_USAGE, "plant needs at least one --attr")
    if args.file == "-":
        data = sys.stdin.buffer.read()
    else:
        with open(args.file, "rb") as handle:
            data = handle.read()
    if len(data) > DBUS_MAX_ARRAY:
        raise Failure(
            EXIT_ERROR,
            f"{len(data)} bytes: D-Bus cannot carry a secret over {DBUS_MAX_ARRAY} bytes (64 MiB array limit)",
        )
    collection = args.collection or svc.alias(args.collection_alias)
    if svc.prop(collection, COLLECTION_IFACE, "Locked"):
        raise Failure(EXIT_LOCKED, f"collection {collection} is locked")
    properties = {
        ITEM_IFACE + ".Label": dbus.String(args.label),
        ITEM_IFACE + ".Attributes": dbus.Dictionary(attributes, signature="ss"),
    }
    secret = dbus.Struct(
        (svc.session, dbus.ByteArray(b""), dbus.ByteArray(data), dbus.String(args.content_type)),
        signature="oayays",
    )
    # An item with exactly these attributes gets the new secret in place: KeePassXC 2.7.4
    # asks a human before CreateItem replaces one. Its own attributes (Title, Uuid...) are
    # not ours to compare.
    unlocked, _ = svc.search(attributes)
    same = [
        path
        for path in unlocked
        if {k: v for k, v in svc.prop(path, ITEM_IFACE, "Attributes").items() if str(k) not in KEEPASSXC_ATTRIBUTES}
        == attributes
    ]
    if same:
        item = same[0]
        svc.call(svc.obj(item), ITEM_IFACE, "SetSecret", secret)
        svc.call(svc.obj(item), PROPS_IFACE, "Set", ITEM_IFACE, "Label", dbus.String(args.label, variant_level=1))
    else:
        item, prompt = svc.call(
            svc.obj(collection),
            COLLECTION_IFACE,
            "CreateItem",
            dbus.Dictionary(properties, signature="sv"),
            secret,
            dbus.Boolean(True),
        )
        if str(prompt) != "/":
            svc.prompt(prompt, "CreateItem")
            item = svc.prompt(prompt, "CreateItem")  # completes with the new item's path
            if item is None:
                item = next(iter(svc.search(attributes)[0]), None)
                if item is None:
                    raise Failure(EXIT_ERROR, "CreateItem's prompt vanished and no item was created")
    if args.print_path:
        print(item)


def cmd_read(svc, args):
    data = svc.secret(svc.single(parse_attributes(args.attr)))
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()


def cmd_sha256(svc, args):
    print(hashlib.sha256(svc.secret(svc.single(parse_attributes(args.attr)))).hexdigest())


def cmd_list(svc, args):
    unlocked, locked = svc.search(parse_attributes(args.attr))
    for path in sorted(unlocked + locked):
        props = svc.call(svc.obj(path), PROPS_IFACE, "GetAll", ITEM_IFACE)
        attributes = {str(k): str(v) for k, v in props["Attributes"].items()}
        print(
            "\t".join(
                [path, str(props["Label"]), "locked" if props["Locked"] else "unlocked", json.dumps(attributes, sort_keys=True)]
            )
        )


def cmd_delete(svc, args):
    attributes = parse_attributes(args.attr)
    if not attributes:
        raise Failure(EXIT_USAGE, "delete needs at least one --attr (it deletes every match)")
    unlocked, locked = svc.search(attributes)
    if not unlocked and not locked:
        raise Failure(EXIT_NONE, f"no item matches {json.dumps(attributes, sort_keys=True)}")
    for path in unlocked:
        svc.prompt(svc.call(svc.obj(path), ITEM_IFACE, "Delete"), f"{path}: Delete")
    if locked:
        raise Failure(EXIT_LOCKED, f"locked, not deleted: {' '.join(locked)}")


def cmd_retag(svc, args):
    """Gives the single match other attributes (Item.Attributes), leaving it at its path."""
    path = svc.single(parse_attributes(args.attr))
    attributes = parse_attributes(args.to)
    svc.call(
        svc.obj(path), PROPS_IFACE, "Set", ITEM_IFACE, "Attributes",
        dbus.Dictionary(attributes, signature="ss", variant_level=1),
    )
    print(path)


def cmd_lock(svc, args):
    collection = args.collection or svc.alias(args.collection_alias)
    svc.call(svc.service, SERVICE_IFACE, "Lock", dbus.Array([collection], signature="o"))
    if not svc.prop(collection, COLLECTION_IFACE, "Locked"):
        raise Failure(EXIT_ERROR, f"{collection} is still unlocked")


def cmd_locked(svc, args):
    collection = args.collection or svc.alias(args.collection_alias)
    print("locked" if svc.prop(collection, COLLECTION_IFACE, "Locked") else "unlocked")


def cmd_unlock(svc, args):
    # gnome-keyring's private interface unlocks with the password and shows no
    # prompt (Service.Unlock would need a prompter, which a headless bus lacks).
    collection = args.collection or svc.alias(args.collection_alias)
    password = args.password if args.password is not None else os.environ.get("SD_TEST_KEYRING_PASSWORD")
    if password is None:
        raise Failure(EXIT_USAGE, "unlock needs --password or SD_TEST_KEYRING_PASSWORD")
    master = dbus.Struct(
        (svc.session, dbus.ByteArray(b""), dbus.ByteArray(password.encode()), dbus.String("text/plain")),
        signature="oayays",
    )
    svc.call(svc.service, INTERNAL_IFACE, "UnlockWithMasterPassword", dbus.ObjectPath(collection), master)
    if svc.prop(collection, COLLECTION_IFACE, "Locked"):
        raise Failure(EXIT_LOCKED, f"{collection} is still locked (wrong password?)")


def cmd_alias(svc, args):
    print(svc.alias(args.name))


def cmd_create_collection(svc, args):
    # gnome-keyring only: its private interface creates a collection with the given
    # password and shows no prompt; an empty password makes a password-less collection,
    # which gnome-keyring unlocks without a prompt.
    properties = dbus.Dictionary({COLLECTION_IFACE + ".Label": dbus.String(args.label)}, signature="sv")
    master = dbus.Struct(
        (svc.session, dbus.ByteArray(b""), dbus.ByteArray(args.password.encode()), dbus.String("text/plain")),
        signature="oayays",
    )
    print(svc.call(svc.service, INTERNAL_IFACE, "CreateWithMasterPassword", properties, master))


def cmd_set_alias(svc, args):
    svc.call(svc.service, SERVICE_IFACE, "SetAlias", args.name, dbus.ObjectPath(args.collection))


def cmd_delete_collection(svc, args):
    svc.call(svc.obj(args.collection), COLLECTION_IFACE, "Delete")


def lock_name(application, dictionary):
    """The bus name of a SecureDictionary item's writer lock (README, "The stored item"):
    FNV-1a (64 bits) of the item name's UTF-8 bytes, in lowercase hex, after the
    application ID when that makes a valid bus name."""
    item = application + ".__SecureDictionary__" + ("." + dictionary if dictionary else "")
    digest = 0xCBF29CE484222325
    for byte in item.encode():
        digest = ((digest ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    name = f"{application}.__SecureDictionary__.h{digest:x}"
    elements = name.split(".")
    valid = len(name.encode()) <= 255 and all(
        element and not element[0].isdigit() and all(c.isascii() and (c.isalnum() or c in "_-") for c in element)
        for element in elements
    )
    return name if valid else f"io.github.securedictionary.lock.h{digest:x}"


def cmd_hold_lock(_, args):
    # What another tool does to write a SecureDictionary item safely: queue for the writer
    # lock's bus name, hold it for the read-modify-write, release it. Held here until
    # standard input closes (or --seconds pass), so a test decides when it ends.
    dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
    bus = dbus.SessionBus()
    name = lock_name(args.app, args.name)
    loop = GLib.MainLoop()
    acquired = []

    def on_acquired(granted):
        if granted == name:
            acquired.append(True)
            loop.quit()

    receiver = bus.add_signal_receiver(on_acquired, "NameAcquired", "org.freedesktop.DBus")
    if bus.request_name(name, 0) != dbus.bus.REQUEST_NAME_REPLY_PRIMARY_OWNER:
        GLib.timeout_add(int(args.wait * 1000), loop.quit)
        loop.run()
        if not acquired:
            raise Failure(EXIT_ERROR, f"{name} still held by another process after {args.wait} s")
    receiver.remove()
    print(f"held {name} pid {os.getpid()}", flush=True)
    holding = GLib.MainLoop()
    if args.seconds is not None:
        GLib.timeout_add(int(args.seconds * 1000), holding.quit)
    else:
        GLib.io_add_watch(sys.stdin.fileno(), GLib.IO_IN | GLib.IO_HUP, lambda *_: holding.quit())
    holding.run()
    bus.release_name(name)


def cmd_portal_secret(_, args):
    # The master secret the Secret portal gives the app this process runs as (inside
    # scripts/sandbox-run), in hex: for a test that opens that app's encrypted files from
    # outside the sandbox, where the portal serves nobody.
    dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
    bus = dbus.SessionBus()
    portal = bus.get_object("org.freedesktop.portal.Desktop", "/org/freedesktop/portal/desktop")
    loop = GLib.MainLoop()
    answer = []

    def on_response(code, _results):
        answer.append(int(code))
        loop.quit()

    bus.add_signal_receiver(on_response, "Response", "org.freedesktop.portal.Request")
    read_end, write_end = os.pipe()
    dbus.Interface(portal, "org.freedesktop.portal.Secret").RetrieveSecret(
        dbus.types.UnixFd(write_end), {"handle_token": f"fixture{os.getpid()}"}, timeout=args.timeout
    )
    os.close(write_end)
    GLib.timeout_add(int(args.timeout * 1000), loop.quit)
    loop.run()
    if answer != [0]:
        raise Failure(EXIT_ERROR, f"the Secret portal answered {answer or 'nothing'}")
    secret = b""
    while chunk := os.read(read_end, 4096):
        secret += chunk
    print(secret.hex())


def main(argv):
    parser = argparse.ArgumentParser(
        prog="keyring-fixture.py",
        description=__doc__.split("\n\n")[0],
        epilog="exit codes: 3 none match, 4 several match, 5 locked, 6 no Secret Service",
    )
    parser.add_argument("--timeout", type=float, default=60.0, help="D-Bus call timeout in seconds (default 60)")
    sub = parser.add_subparsers(dest="command", required=True)

    def with_attrs(p, required=False):
        p.add_argument("--attr", action="append", metavar="KEY=VALUE", required=required, help="attribute to match exactly (repeatable)")
        return p

    def with_collection(p):
        p.add_argument("--collection-alias", default="default", help="collection alias (default: default; 'session' is in-memory)")
        p.add_argument("--collection", help="collection object path (overrides --collection-alias)")
        return p

    p = with_collection(with_attrs(sub.add_parser("plant", help="create or replace an item whose secret is the raw bytes of FILE"), True))
    p.add_argument("--label", required=True)
    p.add_argument("--file", required=True, help="file holding the secret ('-' for stdin)")
    p.add_argument("--content-type", default="application/octet-stream")
    p.add_argument("--print-path", action="store_true", help="print the item's object path")
    p.set_defaults(func=cmd_plant)
    with_attrs(sub.add_parser("read", help="write the raw secret of the single match to stdout")).set_defaults(func=cmd_read)
    with_attrs(sub.add_parser("sha256", help="print the SHA-256 (hex) of the single match's secret")).set_defaults(func=cmd_sha256)
    with_attrs(sub.add_parser("list", help="print path, label, locked/unlocked, attributes (JSON), tab-separated")).set_defaults(func=cmd_list)
    with_attrs(sub.add_parser("delete", help="delete every matching item"), True).set_defaults(func=cmd_delete)
    p = with_attrs(sub.add_parser("retag", help="give the single match the attributes --to (it keeps its path, which it prints)"), True)
    p.add_argument("--to", action="append", metavar="KEY=VALUE", required=True, help="the item's new attributes (repeatable)")
    p.set_defaults(func=cmd_retag)
    with_collection(sub.add_parser("lock", help="lock a collection (Service.Lock)")).set_defaults(func=cmd_lock)
    with_collection(sub.add_parser("locked", help="print whether a collection is locked or unlocked")).set_defaults(func=cmd_locked)
    p = with_collection(sub.add_parser("unlock", help="unlock a collection with its password, no prompt"))
    p.add_argument("--password", help="default: $SD_TEST_KEYRING_PASSWORD")
    p.set_defaults(func=cmd_unlock)
    p = sub.add_parser("alias", help="print the collection path an alias names")
    p.add_argument("name", nargs="?", default="default")
    p.set_defaults(func=cmd_alias)
    p = sub.add_parser("create-collection", help="create a collection with a password, no prompt (gnome-keyring); print its path")
    p.add_argument("--label", required=True)
    p.add_argument("--password", default="", help="default: none (a password-less collection)")
    p.set_defaults(func=cmd_create_collection)
    p = sub.add_parser("set-alias", help="point an alias at a collection (gnome-keyring: 'default' only)")
    p.add_argument("name")
    p.add_argument("collection", help="collection object path")
    p.set_defaults(func=cmd_set_alias)
    p = sub.add_parser("delete-collection", help="delete a collection and its items")
    p.add_argument("collection", help="collection object path")
    p.set_defaults(func=cmd_delete_collection)

    p = sub.add_parser("hold-lock", help="take an item's writer lock (its bus name) and hold it until stdin closes")
    p.add_argument("--app", required=True, help="application ID")
    p.add_argument("--name", default="", help="dictionary name (default: the default dictionary)")
    p.add_argument("--wait", type=float, default=10.0, help="seconds to wait for the lock (default 10)")
    p.add_argument("--seconds", type=float, help="hold this long instead of until stdin closes")
    p.set_defaults(func=cmd_hold_lock)

    sub.add_parser(
        "portal-secret", help="print (hex) the Secret portal's master secret of the app this runs as (inside scripts/sandbox-run)"
    ).set_defaults(func=cmd_portal_secret)

    args = parser.parse_args(argv)
    try:
        args.func(None if args.command in ("hold-lock", "portal-secret") else SecretService(args.timeout), args)
    except Failure as failure:
        sys.stderr.write(f"keyring-fixture: {failure}\n")
        return failure.code
    except OSError as error:
        sys.stderr.write(f"keyring-fixture: {error}\n")
        return EXIT_ERROR
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
