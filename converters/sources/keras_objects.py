"""The custom objects a Keras config names, read from the config before Keras loads it.

Keras registers a custom class or function under `package>Name` (`register_keras_serializable
(package="kecam")`): the config holds that full name in `registered_name` (Keras 3 and tf_keras
`.keras`), in `class_name` (tf_keras `.h5`), or as a function's `config` (`{"class_name":
"function", "config": "kecam>hard_swish"}`). A name nothing registers is reported as the object
(`hard_swish`, from package `kecam`), and an object given with --custom-objects also answers to
its registered full name.

Packages whose classes Keras loads by name (keras-hub) are imported when the config names one of
their classes, and only for classes the package itself registers: importing it registers them,
and a config naming anything else of the package is refused.
"""

from __future__ import annotations

from graphfreeze.errors import ConfigError, InputError, install_hint
from graphfreeze.sources.keras_config import objects

# package prefix in registered names -> (module to import, pip extra of graphfreeze)
PACKAGES = {"keras_hub": ("keras_hub", "keras-hub")}


def references(config: dict) -> list[str]:
    """Every registered full name (`package>Name`) the config names, in order, once."""
    found: dict[str, None] = {}
    for obj in objects(config):
        names = [obj.get("registered_name"), obj.get("class_name")]
        if obj.get("class_name") == "function" or obj.get("module") == "builtins":
            names.append(obj.get("config"))
        for name in names:
            if isinstance(name, str) and ">" in name:
                found[name] = None
        conf = obj.get("config")
        for value in [*obj.values(), *(conf.values() if isinstance(conf, dict) else ())]:
            # legacy: an activation given as the string "pkg>name"
            if isinstance(value, str) and ">" in value and value.count(">") == 1 and \
                    " " not in value:
                found[value] = None
    return list(found)


def short(name: str) -> str:
    return name.rsplit(">", 1)[-1]


def package(name: str) -> str:
    return name.rsplit(">", 1)[0]


def _keras_hub_modules(config: dict) -> list[str]:
    """The modules named by objects of packages in PACKAGES (`keras_hub.src.models...`)."""
    return [str(obj.get("module")) for obj in objects(config)
            if str(obj.get("module") or "").split(".")[0] in PACKAGES]


def import_packages(config: dict, where: str, flavour: str) -> None:
    """Import the packages of PACKAGES whose classes the config names (they register them);
    ConfigError when one is not installed, InputError when the config names a class of the
    package that the package does not register."""
    import importlib

    wanted = {package(n).split("/")[0] for n in references(config)} & set(PACKAGES)
    wanted |= {m.split(".")[0] for m in _keras_hub_modules(config)}
    for prefix in sorted(wanted):
        module, extra = PACKAGES[prefix]
        if flavour != "keras":
            raise InputError(f"{where}: names {prefix} classes but was saved by tf_keras "
                             f"(Keras 2); {prefix} models load in Keras 3: re-save it there")
        try:
            importlib.import_module(module)
        except ImportError as err:
            name = next((n for n in references(config) if package(n) == prefix), prefix)
            raise ConfigError(f"{where}: class '{name}' is from the {extra} package, which is "
                              f"not installed; {install_hint(extra)}") from err
        for obj in objects(config):
            mod = str(obj.get("module") or "")
            if mod.split(".")[0] != prefix:
                continue
            name = obj.get("registered_name")
            cls = _registered(name, "keras") if isinstance(name, str) else None
            if cls is None or short(name) != obj.get("class_name") or \
                    not getattr(cls, "__module__", "").startswith(prefix + "."):
                raise InputError(f"{where}: names {mod}.{obj.get('class_name')}, which "
                                 f"{prefix} does not register as a model class; the file is "
                                 "corrupt or not from keras-hub, re-save the model")


def _registered(name: str, flavour: str):
    if flavour == "keras":
        import keras

        return keras.saving.get_registered_object(name)
    import tf_keras

    return tf_keras.utils.get_registered_object(name)


def with_full_names(objects: dict, config: dict) -> dict:
    """`objects` (by short name, from --custom-objects) also under each full name the config
    gives them (`kecam>hard_swish`), so Keras finds them whichever it looks up."""
    full = {n: objects[short(n)] for n in references(config)
            if short(n) in objects and n not in objects}
    return {**objects, **full}


def missing(config: dict, objects: dict, flavour: str) -> str | None:
    """The first full name the config gives that neither Keras' registry nor `objects` has."""
    for name in references(config):
        if name in objects or short(name) in objects:
            continue
        if _registered(name, flavour) is None:
            return name
    return None


def missing_message(where: str, name: str) -> str:
    what, pkg = short(name), package(name)
    return (f"{where}: needs the custom object '{what}' (registered by package '{pkg}' as "
            f"'{name}'); pass --custom-objects MODULE:{what} with the module of {pkg} that "
            "defines it")
