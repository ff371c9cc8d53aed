"""`freeze cache ls|prune [CACHE]`: what a batch cache (local or gs://) holds, and removing the
least recently used entries. Thin: graphfreeze.batch.cache_admin does the work; this parses
and prints."""

from __future__ import annotations

import time

import click

# `freeze batch --cache` and `freeze cache ls|prune --cache` name the same thing, declared once
cache_option = click.option(
    "--cache", "cache_dir", metavar="DIR",
    help="Cache folder, local, gs:// or ram:// (default: ~/.cache/graphfreeze).")


@click.group("cache")
def cache_command():
    """List and prune the `freeze batch` cache (local or gs://).

    \b
    Examples:
      freeze cache ls gs://my-bucket/graphfreeze-cache
      freeze cache prune --max-size 10GB
      freeze cache prune --cache gs://my-bucket/graphfreeze-cache --older-than 30d --dry-run
    """


def _cache_argument(command):
    """CACHE as an argument, or --cache as `freeze batch` takes it."""
    command = click.argument("cache", required=False, metavar="[CACHE]")(command)
    return cache_option(command)


@cache_command.command("ls", short_help="List the entries and the totals.")
@_cache_argument
@click.option("--debug", is_flag=True, help="Show tracebacks.")
def ls_command(cache, cache_dir, debug):
    """List the entries, least recently used first, and the totals.

    CACHE (or --cache): a cache folder or gs://BUCKET/PREFIX (default: ~/.cache/graphfreeze).
    """
    from graphfreeze_cli.running import run

    cache = _one(cache, cache_dir)

    def list_them():
        from graphfreeze.batch import cache_admin

        folder = cache_admin.folder_of(cache)
        found = cache_admin.entries(folder)
        now = time.time()
        if found:
            click.echo(f"{'KEY':<12}  {'JOB':<20}  {'TARGETS':<28}  {'SIZE':>9}  LAST USED")
        for entry in found:
            click.echo(_line(entry, now))
        complete = [e for e in found if e.complete]
        click.echo(f"{len(complete)} entries, {_size(sum(e.size for e in found))}"
                   + (f" ({len(found) - len(complete)} incomplete)" if len(complete) < len(found)
                      else "") + f" in {folder}")

    run(list_them, debug, private_tmp=False)


@cache_command.command("prune",
                       short_help="Remove the least recently used or unused entries.")
@_cache_argument
@click.option("--max-size", metavar="SIZE",
              help="Remove the least recently used entries until the cache is under SIZE (10GB).")
@click.option("--older-than", metavar="AGE",
              help="Remove the entries not used within AGE (30d, 12h, 2w).")
@click.option("--dry-run", is_flag=True, help="Say what would be removed; remove nothing.")
@click.option("--debug", is_flag=True, help="Show tracebacks.")
def prune_command(cache, cache_dir, max_size, older_than, dry_run, debug):
    """Remove the least recently used entries down to --max-size, and/or those not used within
    --older-than.

    CACHE (or --cache): a cache folder or gs://BUCKET/PREFIX (default: ~/.cache/graphfreeze).
    """
    from graphfreeze_cli.running import run

    cache = _one(cache, cache_dir)
    if max_size is None and older_than is None:
        raise click.UsageError("give --max-size SIZE and/or --older-than AGE")

    def prune():
        from graphfreeze.batch import cache_admin

        size = cache_admin.parse_size(max_size) if max_size is not None else None
        age = cache_admin.parse_age(older_than) if older_than is not None else None
        folder = cache_admin.folder_of(cache)
        now = time.time()
        verb = "would remove" if dry_run else "removed"
        done = cache_admin.prune(folder, size, age, dry_run, now,
                                 on_gone=lambda entry: click.echo(f"{verb} {_line(entry, now)}"))
        click.echo(f"{'would prune' if dry_run else 'pruned'} {len(done.gone)} entries "
                   f"({_size(sum(e.size for e in done.gone))}); {len(done.kept)} left, "
                   f"{_size(sum(e.size for e in done.kept))} in {folder}")

    run(prune, debug, private_tmp=False)


def _one(cache: str | None, cache_dir: str | None) -> str | None:
    if cache and cache_dir and cache != cache_dir:
        raise click.UsageError(f"two caches named ({cache} and --cache {cache_dir}); give one")
    return cache or cache_dir


def _size(n: int) -> str:
    from graphfreeze_cli.show import size

    return size(n)


def _line(entry, now: float) -> str:
    stamp = time.strftime("%Y-%m-%d %H:%M", time.localtime(entry.last_used))
    job = entry.job or ("(incomplete)" if not entry.complete else "?")
    return (f"{entry.key[:12]:<12}  {job[:20]:<20}  {','.join(entry.targets)[:28]:<28}  "
            f"{_size(entry.size):>9}  {stamp} ({_ago(now - entry.last_used)})")


def _ago(seconds: float) -> str:
    for unit, span in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= span:
            return f"{seconds / span:.0f} {unit} ago"
    return "just now"
