-- What the watch (healthlog.watch) has told each notification target: one row per target
-- and rule that holds and was told; the row goes when its "recovered" is told. Kept in
-- the journal so that a restart neither repeats a notice nor loses one. `target` is a
-- hash of the target's URL (the URL itself may carry a token: it is never stored);
-- `rule_key` names the rule, the account's id and the rule's subject (a metric, a class);
-- `subject` is the notice's title, for the "recovered" that ends it.
CREATE TABLE watch_notices (
    target TEXT NOT NULL,
    rule_key TEXT NOT NULL,
    subject TEXT NOT NULL,
    told_at TEXT NOT NULL,
    PRIMARY KEY (target, rule_key)
) WITHOUT ROWID;
