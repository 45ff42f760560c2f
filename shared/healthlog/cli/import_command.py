"""``healthlog import``: the Health app's own export, years of history, into the store.

It becomes one delivery, folded in steps by the same fold as every delivery; the
work is ``ops.importer``'s, the texts ``delivery_report``'s.
"""

from __future__ import annotations

from pathlib import Path

import click

from healthlog.cli.common import CouldNot, emit, obtain_settings
from healthlog.cli.options import account_options, chosen_account, json_option


@click.command("import")
@click.argument("path", type=click.Path(exists=True, path_type=Path))
@account_options
@click.option(
    "--no-fold",
    is_flag=True,
    help="Store and journal it only; the next fold pass (or `healthlog fold`) folds it.",
)
@json_option
def import_(
    path: Path, account: str | None, token: str | None, no_fold: bool, as_json: bool
) -> None:
    """Import the Health app's own export: years of history into the same store.

    PATH is the export.zip from "Export All Health Data", the folder it unzips to, or a
    bare export.xml. It becomes one delivery of the account (the only one, or
    --account): archived byte for byte, journalled, and folded in steps by the same fold
    as every delivery, so status, replay and a rebuild from the archive include it. An
    interrupted import goes on where it stopped at the next fold. Its size limit is
    HEALTHLOG_MAX_IMPORT_BYTES. Exit status 1 when the import failed, folded nothing,
    or its export.xml is cut or not well-formed (what was read before is folded).
    docs/history.md.
    """
    from healthlog.cli import delivery_report, progress
    from healthlog.ops import accounts, importer, store
    from healthlog.reads import Reads

    chosen = chosen_account(account, token)
    settings = obtain_settings()
    bar = progress.Progress("import: stored", "bytes", enabled=progress.shown_to_person(as_json))

    def heard(step: importer.ImportProgress) -> None:
        if step.phase == "fold" and bar.label != "import: folded":
            bar.label, bar.unit = "import: folded", "bytes of export.xml"
        bar.update(step.bytes_done, step.bytes_total)

    with store.opened(settings, "write", archive=True) as opened, bar:
        journal = opened.journal
        account_id = Reads.of(journal, accounts.find_id(journal, chosen)).account.id
        report = importer.import_export(
            path,
            journal=journal,
            archive=opened.archive,
            settings=settings,
            account_id=account_id,
            progress=heard,
            fold=not no_fold,
        )
    data = report.as_dict()
    emit(as_json, data, delivery_report.import_text(data))
    fault = delivery_report.import_fault(data)
    if fault is not None:
        raise CouldNot(fault)


COMMANDS: tuple[click.Command, ...] = (import_,)
