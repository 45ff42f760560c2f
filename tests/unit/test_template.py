"""template.yaml, translated offline by aws-sam-translator: what cfn-lint cannot check.

``make cfnlint`` checks that the template is valid CloudFormation. These tests check that
it says what healthlog needs: an unsigned Function URL, a fold ticked every minute that
runs once at a time, a scheduled watch that may publish to its own SNS topic and nothing
else, least-privilege roles, a private TLS-only bucket, and the environment variables
``healthlog.config.Settings`` reads, no more and no fewer.

The translation is the one CloudFormation runs (``AWS::Serverless-2016-10-31``), after
the local code paths are replaced with S3 URIs as ``sam package`` does; no AWS call.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
import yaml
from healthlog.config import ENV_VARS, Settings
from samtranslator.parser.parser import Parser
from samtranslator.translator.translator import Translator
from samtranslator.yaml_helper import intrinsics_multi_constructor

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "template.yaml"

#: variables Settings reads that the template leaves unset, and why
NOT_IN_THE_CLOUD = {
    "HEALTHLOG_JOURNAL_URL": "it holds the database password; the functions read it once "
    "from the SSM SecureString named by HEALTHLOG_JOURNAL_URL_PARAMETER",
    "HEALTHLOG_S3_ENDPOINT_URL": "empty means AWS's own S3; only MinIO or moto need one",
    "HEALTHLOG_FOLD_URL": "the local stack's HTTP wake-up; in AWS ingest invokes the fold "
    "function by name (HEALTHLOG_FOLD_FUNCTION_NAME)",
    "HEALTHLOG_PASS_BUDGET_S": "a served pass's budget; a Lambda pass is bounded by the "
    "invocation's remaining time instead",
    "HEALTHLOG_FOLD_SECRET": "the local stack's wake-up secret; in AWS only the roles the "
    "template names may invoke the fold function",
    "HEALTHLOG_CLIENT_IDLE_TIMEOUT_S": "the local HTTP server's idle timeout; in AWS the "
    "Function URL's front end holds the connections",
    "HEALTHLOG_MAX_IMPORT_BYTES": "the import of the Health app's export runs on your "
    "machine (healthlog.ops.importer), against the cloud's journal and bucket",
    "HEALTHLOG_SOURCE_PRIORITY": "a setting of the reads (dashboard, plot, export, MCP), "
    "which run on your machine; neither function reads points",
    "HEALTHLOG_WATCH_DISK_FREE_PERCENT": "the disk rule reads a SQLite journal's and a "
    "folder archive's disks; in AWS they are PostgreSQL and S3, with no disk of ours",
}

FUNCTIONS = {"IngestFunction": "ingest", "FoldFunction": "fold", "WatchFunction": "watch"}

#: a Function URL request (the whole invoke payload) is at most 6 MB
LAMBDA_PAYLOAD_BYTES = 6 * 1024 * 1024
#: what the event carries besides the body: headers, request context
EVENT_OVERHEAD_BYTES = 256 * 1024

BASIC_EXECUTION = "service-role/AWSLambdaBasicExecutionRole"
VPC_ACCESS = "service-role/AWSLambdaVPCAccessExecutionRole"


class _Loader(yaml.SafeLoader):
    """YAML with CloudFormation's short-form intrinsics (``!Ref``, ``!Sub``...)."""


_Loader.add_multi_constructor("!", intrinsics_multi_constructor)


def load_template() -> dict[str, Any]:
    template: dict[str, Any] = yaml.load(TEMPLATE.read_text(), Loader=_Loader)  # noqa: S506
    return template


@pytest.fixture(scope="module")
def cfn() -> dict[str, Any]:
    template = load_template()
    for resource in template["Resources"].values():
        properties = resource.get("Properties", {})
        for key in ("CodeUri", "ContentUri"):
            if key in properties:
                properties[key] = f"s3://packaged/{properties[key].strip('/')}"
    # a region for the pseudo parameters; the session makes no call
    session = boto3.session.Session(region_name="eu-west-1")
    translated: dict[str, Any] = Translator(None, Parser(), boto_session=session).translate(
        template, parameter_values={}, get_managed_policy_map=lambda: {}
    )
    return translated


def resources(cfn: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {
        name: r.get("Properties", {}) for name, r in cfn["Resources"].items() if r["Type"] == kind
    }


def function(cfn: dict[str, Any], name: str) -> dict[str, Any]:
    return resources(cfn, "AWS::Lambda::Function")[name]


def env(cfn: dict[str, Any], name: str) -> dict[str, Any]:
    variables: dict[str, Any] = function(cfn, name)["Environment"]["Variables"]
    return variables


def branches(value: Any) -> Iterator[Any]:
    """Every value an ``Fn::If`` may take (both branches), without ``AWS::NoValue``."""
    if isinstance(value, dict) and "Fn::If" in value:
        for branch in value["Fn::If"][1:]:
            yield from branches(branch)
    elif value != {"Ref": "AWS::NoValue"}:
        yield value


def statements(cfn: dict[str, Any], role: str) -> list[dict[str, Any]]:
    found = []
    for policy in resources(cfn, "AWS::IAM::Role")[role].get("Policies", []):
        for document in branches(policy):
            found.extend(document["PolicyDocument"]["Statement"])
    return found


def actions(cfn: dict[str, Any], role: str) -> set[str]:
    found: set[str] = set()
    for statement in statements(cfn, role):
        action = statement["Action"]
        found.update([action] if isinstance(action, str) else action)
    return found


def role_of(cfn: dict[str, Any], name: str) -> str:
    role: str = function(cfn, name)["Role"]["Fn::GetAtt"][0]
    return role


# --- the endpoints ---------------------------------------------------------------------


def test_the_ingest_url_takes_unsigned_requests(cfn: dict[str, Any]) -> None:
    """The phone cannot sign requests: AuthType NONE, and our token check is the gate."""
    (url,) = resources(cfn, "AWS::Lambda::Url").values()
    assert url["AuthType"] == "NONE"
    assert url["TargetFunctionArn"] == {"Ref": "IngestFunction"}
    granted = {
        p["Action"]: p
        for p in resources(cfn, "AWS::Lambda::Permission").values()
        if p["FunctionName"] == {"Ref": "IngestFunction"}
    }
    assert granted["lambda:InvokeFunctionUrl"]["FunctionUrlAuthType"] == "NONE"
    assert granted["lambda:InvokeFunction"]["InvokedViaFunctionUrl"] is True
    assert {p["Principal"] for p in granted.values()} == {"*"}
    assert cfn["Outputs"]["IngestUrl"]["Value"] == {
        "Fn::GetAtt": ["IngestFunctionUrl", "FunctionUrl"]
    }


def schedules(cfn: dict[str, Any], name: str) -> list[dict[str, Any]]:
    """The EventBridge rules whose targets include the function ``name``."""
    arn = {"Fn::GetAtt": [name, "Arn"]}
    return [
        r
        for r in resources(cfn, "AWS::Events::Rule").values()
        if arn in [t["Arn"] for t in r["Targets"]]
    ]


def invoke_config(cfn: dict[str, Any], name: str) -> dict[str, Any]:
    (config,) = [
        c
        for c in resources(cfn, "AWS::Lambda::EventInvokeConfig").values()
        if c["FunctionName"] == {"Ref": name}
    ]
    return config


def test_the_fold_is_ticked_every_minute_and_reconciles_once_a_day(cfn: dict[str, Any]) -> None:
    rules = {r["ScheduleExpression"]: r for r in schedules(cfn, "FoldFunction")}
    assert set(rules) == {"rate(1 minute)", "rate(1 day)"}
    for rule in rules.values():
        assert rule["State"] == "ENABLED"
        assert [t["Arn"] for t in rule["Targets"]] == [{"Fn::GetAtt": ["FoldFunction", "Arn"]}]
    assert "Input" not in rules["rate(1 minute)"]["Targets"][0]  # a tick: a pass
    (daily,) = rules["rate(1 day)"]["Targets"]
    spec = importlib.util.spec_from_file_location("fold_main", ROOT / "functions/fold/main.py")
    assert spec is not None and spec.loader is not None
    fold = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fold)
    assert json.loads(daily["Input"]) == fold.RECONCILE_EVENT


def test_one_fold_runs_at_a_time_and_missed_ticks_do_not_pile_up(cfn: dict[str, Any]) -> None:
    assert function(cfn, "FoldFunction")["ReservedConcurrentExecutions"] == 1
    config = invoke_config(cfn, "FoldFunction")
    # a throttled tick or wake-up is dropped after a minute, never retried: the next
    # tick does the same work
    assert config["MaximumEventAgeInSeconds"] == 60
    assert config["MaximumRetryAttempts"] == 0


def test_the_fold_timeout_leaves_time_to_claim_work_and_finish_it(cfn: dict[str, Any]) -> None:
    """A pass stops claiming a margin before the end: one delivery's deadline + slack."""
    spec = importlib.util.spec_from_file_location(
        "fold_main_of_the_template", ROOT / "functions" / "fold" / "main.py"
    )
    assert spec is not None and spec.loader is not None
    fold_main = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fold_main)  # defines functions only: no cold start
    literal = {k: v for k, v in env(cfn, "FoldFunction").items() if isinstance(v, str)}
    margin = fold_main.lambda_margin_s(Settings.from_env(literal))
    assert function(cfn, "FoldFunction")["Timeout"] - margin >= 60


def test_the_body_limit_leaves_room_for_base64_under_the_lambda_payload_limit(
    cfn: dict[str, Any],
) -> None:
    """Over the limit, ingest's 413 says "Batch Requests"; Lambda's own 413 would not."""
    limit = int(env(cfn, "IngestFunction")["HEALTHLOG_MAX_BODY_BYTES"])
    assert limit * 4 / 3 + EVENT_OVERHEAD_BYTES <= LAMBDA_PAYLOAD_BYTES


def test_every_function_runs_its_handler_from_the_shared_layer(cfn: dict[str, Any]) -> None:
    (layer_name,) = resources(cfn, "AWS::Lambda::LayerVersion")
    layer = resources(cfn, "AWS::Lambda::LayerVersion")[layer_name]
    assert set(resources(cfn, "AWS::Lambda::Function")) == set(FUNCTIONS)
    for name, folder in FUNCTIONS.items():
        fn = function(cfn, name)
        assert fn["Layers"] == [{"Ref": layer_name}]
        assert fn["Runtime"] in layer["CompatibleRuntimes"]
        assert fn["Architectures"] == layer["CompatibleArchitectures"]
        assert fn["Handler"] == "main.handler"
        main = ast.parse((ROOT / "functions" / folder / "main.py").read_text())
        assert "handler" in {n.name for n in main.body if isinstance(n, ast.FunctionDef)}


def test_the_layer_requirements_are_the_locked_runtime_dependencies() -> None:
    """shared/requirements.txt pins what constraints.txt pins, and every runtime
    dependency in pyproject.toml but the local stack's server (functions-framework's
    app under waitress) and its watch's notifications (apprise)."""
    locked = _pins((ROOT / "constraints.txt").read_text())
    layer = _pins((ROOT / "shared" / "requirements.txt").read_text())
    assert {name: locked.get(name) for name in layer} == layer
    pyproject = (ROOT / "pyproject.toml").read_text()
    block = pyproject.split("dependencies = [", 1)[1].split("]", 1)[0]
    runtime = {_name(re.split(r"[\[<>=!~ ]", d)[0]) for d in re.findall(r'"([^"]+)"', block)}
    # and the watch's notifications (apprise), run by serve and `healthlog watch`
    local_only = {"functions-framework", "waitress", "apprise"}
    assert runtime - local_only <= set(layer)
    assert not local_only & set(layer)


def _name(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _pins(text: str) -> dict[str, str]:
    lines = (line.split("#", 1)[0].strip() for line in text.splitlines())
    return {_name(n): v for n, _, v in (line.partition("==") for line in lines if line)}


# --- the environment ---------------------------------------------------------------------


def test_the_environment_is_exactly_what_settings_reads(cfn: dict[str, Any]) -> None:
    every = [set(env(cfn, name)) for name in FUNCTIONS]
    assert all(variables <= set(ENV_VARS) for variables in every)
    assert set.union(*every) == set(ENV_VARS) - set(NOT_IN_THE_CLOUD)
    assert set(NOT_IN_THE_CLOUD) <= set(ENV_VARS), "a reason for a variable that is gone"


def test_the_literal_values_are_valid_settings(cfn: dict[str, Any]) -> None:
    for name in FUNCTIONS:
        literal = {k: v for k, v in env(cfn, name).items() if isinstance(v, str)}
        Settings.from_env(literal)  # raises ConfigError on a value it cannot read
    assert env(cfn, "IngestFunction")["HEALTHLOG_ARCHIVE_URL"] == {
        "Fn::Sub": "s3://${ArchiveBucket}"
    }


def test_the_journal_url_is_never_in_plain_text(cfn: dict[str, Any]) -> None:
    for name in FUNCTIONS:
        variables = env(cfn, name)
        assert "HEALTHLOG_JOURNAL_URL" not in variables
        assert variables["HEALTHLOG_JOURNAL_URL_PARAMETER"] == {"Ref": "JournalUrlParameterName"}
    assert "postgres" not in TEMPLATE.read_text().split("Resources:", 1)[1]


def test_ingest_wakes_the_fold_by_name_unless_told_not_to(cfn: dict[str, Any]) -> None:
    assert env(cfn, "IngestFunction")["HEALTHLOG_FOLD_FUNCTION_NAME"] == {
        "Fn::If": ["WakeFold", {"Ref": "FoldFunction"}, ""]
    }


# --- least privilege ---------------------------------------------------------------------


def test_no_role_may_delete_anything_or_use_wildcards(cfn: dict[str, Any]) -> None:
    for role in resources(cfn, "AWS::IAM::Role"):
        for statement in statements(cfn, role):
            assert statement["Effect"] == "Allow"
            assert "NotAction" not in statement and "NotResource" not in statement
            assert statement["Resource"] != "*"
        granted = actions(cfn, role)
        assert not [a for a in granted if "delete" in a.lower() or "*" in a], role


def test_managed_policies_are_logging_and_only_in_a_vpc_network_interfaces(
    cfn: dict[str, Any],
) -> None:
    """The VPC policy has ec2:DeleteNetworkInterface: Lambda removes its own interfaces
    with it. It touches no data, and is attached only when the functions run in a VPC."""
    for role in resources(cfn, "AWS::IAM::Role").values():
        arn = "arn:${AWS::Partition}:iam::aws:policy/"
        assert role["ManagedPolicyArns"] == [
            {"Fn::Sub": arn + BASIC_EXECUTION},
            {"Fn::If": ["InVpc", {"Fn::Sub": arn + VPC_ACCESS}, {"Ref": "AWS::NoValue"}]},
        ]


def test_ingest_may_write_bodies_but_not_read_them(cfn: dict[str, Any]) -> None:
    role = role_of(cfn, "IngestFunction")
    s3 = {a for a in actions(cfn, role) if a.startswith("s3:")}
    assert s3 == {"s3:PutObject", "s3:AbortMultipartUpload"}
    (archive,) = [s for s in statements(cfn, role) if "s3:PutObject" in s["Action"]]
    assert archive["Resource"] == {"Fn::Sub": "${ArchiveBucket.Arn}/*"}


def test_fold_may_read_bodies_but_not_write_them(cfn: dict[str, Any]) -> None:
    s3 = {a for a in actions(cfn, role_of(cfn, "FoldFunction")) if a.startswith("s3:")}
    # ListBucket makes a missing body a 404 (failed: missing_body), not a 403 (pending)
    assert s3 == {"s3:GetObject", "s3:ListBucket"}


def test_only_ingest_may_invoke_and_only_the_fold(cfn: dict[str, Any]) -> None:
    ingest = role_of(cfn, "IngestFunction")
    (wake,) = [s for s in statements(cfn, ingest) if s["Action"] == "lambda:InvokeFunction"]
    assert wake["Resource"] == {"Fn::GetAtt": ["FoldFunction", "Arn"]}
    for name in ("FoldFunction", "WatchFunction"):
        assert not [a for a in actions(cfn, role_of(cfn, name)) if a.startswith("lambda:")]


def test_each_may_read_the_journal_url_parameter_and_nothing_else_in_ssm(
    cfn: dict[str, Any],
) -> None:
    parameter = {
        "Fn::Sub": "arn:${AWS::Partition}:ssm:${AWS::Region}:${AWS::AccountId}"
        ":parameter${JournalUrlParameterName}"
    }
    for name in FUNCTIONS:
        role = role_of(cfn, name)
        (ssm,) = [s for s in statements(cfn, role) if str(s["Action"]).startswith("ssm:")]
        assert (ssm["Action"], ssm["Resource"]) == ("ssm:GetParameter", parameter)
        (kms,) = [s for s in statements(cfn, role) if str(s["Action"]).startswith("kms:")]
        assert kms["Action"] == "kms:Decrypt"
        assert kms["Condition"] == {
            "StringEquals": {"kms:ViaService": {"Fn::Sub": "ssm.${AWS::Region}.amazonaws.com"}}
        }


# --- the archive bucket ------------------------------------------------------------------


def test_the_bucket_is_private_encrypted_versioned_and_kept(cfn: dict[str, Any]) -> None:
    (bucket,) = resources(cfn, "AWS::S3::Bucket").values()
    (rule,) = bucket["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    assert rule["ServerSideEncryptionByDefault"]["SSEAlgorithm"] in ("AES256", "aws:kms")
    assert bucket["VersioningConfiguration"] == {"Status": "Enabled"}
    assert set(bucket["PublicAccessBlockConfiguration"].values()) == {True}
    assert len(bucket["PublicAccessBlockConfiguration"]) == 4
    assert cfn["Resources"]["ArchiveBucket"]["DeletionPolicy"] == "Retain"


def test_the_bucket_policy_refuses_requests_without_tls(cfn: dict[str, Any]) -> None:
    (policy,) = resources(cfn, "AWS::S3::BucketPolicy").values()
    assert policy["Bucket"] == {"Ref": "ArchiveBucket"}
    (deny,) = [
        s
        for s in policy["PolicyDocument"]["Statement"]
        if s.get("Condition") == {"Bool": {"aws:SecureTransport": "false"}}
    ]
    assert (deny["Effect"], deny["Principal"], deny["Action"]) == ("Deny", "*", "s3:*")
    assert deny["Resource"] == [
        {"Fn::GetAtt": ["ArchiveBucket", "Arn"]},
        {"Fn::Sub": "${ArchiveBucket.Arn}/*"},
    ]


# --- the network -------------------------------------------------------------------------


def test_the_functions_join_the_database_vpc_only_when_subnets_are_given(
    cfn: dict[str, Any],
) -> None:
    assert cfn["Conditions"]["InVpc"] == {
        "Fn::Not": [{"Fn::Equals": [{"Fn::Join": ["", {"Ref": "VpcSubnetIds"}]}, ""]}]
    }
    for name in FUNCTIONS:
        assert function(cfn, name)["VpcConfig"] == {
            "Fn::If": [
                "InVpc",
                {
                    "SubnetIds": {"Ref": "VpcSubnetIds"},
                    "SecurityGroupIds": {"Ref": "VpcSecurityGroupIds"},
                },
                {"Ref": "AWS::NoValue"},
            ]
        }


# --- the watch ---------------------------------------------------------------------------


def test_the_watch_runs_on_the_schedule_parameter_and_is_not_retried(
    cfn: dict[str, Any],
) -> None:
    (rule,) = schedules(cfn, "WatchFunction")
    assert rule["ScheduleExpression"] == {"Ref": "WatchSchedule"}
    assert rule["State"] == "ENABLED"
    assert "Input" not in rule["Targets"][0]  # the handler reads nothing of the event
    parameter = cfn["Parameters"]["WatchSchedule"]
    assert parameter["Default"] == "rate(15 minutes)"
    pattern = re.compile(parameter["AllowedPattern"])
    assert pattern.match("rate(1 hour)") and pattern.match("cron(0 8 * * ? *)")
    assert not pattern.match("every 15 minutes")
    # the journal holds what was told: a failed run is healed by the next one
    assert invoke_config(cfn, "WatchFunction")["MaximumRetryAttempts"] == 0


def test_the_watch_timeout_outlasts_an_unreachable_sns_for_several_notices(
    cfn: dict[str, Any],
) -> None:
    """A run killed between a notice's claim and its publish would never send it."""
    from healthlog.ops import watch_aws

    per_notice = watch_aws.ATTEMPTS * (watch_aws.CONNECT_TIMEOUT_S + watch_aws.READ_TIMEOUT_S)
    assert function(cfn, "WatchFunction")["Timeout"] >= 5 * per_notice
    # no schedule of the fold invokes the watch, nor the other way round
    assert not [r for r in schedules(cfn, "FoldFunction") if r in schedules(cfn, "WatchFunction")]


def test_the_watch_tells_its_own_topic_by_its_arn(cfn: dict[str, Any]) -> None:
    from healthlog.ops import watch_aws

    (topic,) = resources(cfn, "AWS::SNS::Topic")
    variables = env(cfn, "WatchFunction")
    assert variables["HEALTHLOG_NOTIFY_URLS"] == {"Fn::Sub": f"{watch_aws.PREFIX}${{{topic}}}"}
    assert variables["HEALTHLOG_WATCH_NO_DELIVERY_H"] == {"Ref": "WatchNoDeliveryHours"}
    assert cfn["Parameters"]["WatchNoDeliveryHours"]["Default"] == 26
    assert cfn["Outputs"]["AlertTopicArn"]["Value"] == {"Ref": topic}
    # the other functions tell no one
    for name in ("IngestFunction", "FoldFunction"):
        assert "HEALTHLOG_NOTIFY_URLS" not in env(cfn, name)


def test_only_the_watch_may_publish_and_only_to_its_topic(cfn: dict[str, Any]) -> None:
    (topic,) = resources(cfn, "AWS::SNS::Topic")
    watch = role_of(cfn, "WatchFunction")
    (publish,) = [s for s in statements(cfn, watch) if str(s["Action"]).startswith("sns:")]
    assert (publish["Action"], publish["Resource"]) == ("sns:Publish", {"Ref": topic})
    assert {a for a in actions(cfn, watch) if not a.startswith(("ssm:", "kms:"))} == {"sns:Publish"}
    for name in ("IngestFunction", "FoldFunction"):
        assert not [a for a in actions(cfn, role_of(cfn, name)) if a.startswith("sns:")]


def test_an_email_subscription_only_when_an_address_is_given(cfn: dict[str, Any]) -> None:
    (topic,) = resources(cfn, "AWS::SNS::Topic")
    (name, subscription) = next(iter(resources(cfn, "AWS::SNS::Subscription").items()))
    assert cfn["Resources"][name]["Condition"] == "AlertByEmail"
    assert cfn["Conditions"]["AlertByEmail"] == {
        "Fn::Not": [{"Fn::Equals": [{"Ref": "AlertEmail"}, ""]}]
    }
    assert subscription == {
        "TopicArn": {"Ref": topic},
        "Protocol": "email",
        "Endpoint": {"Ref": "AlertEmail"},
    }
    assert cfn["Parameters"]["AlertEmail"]["Default"] == ""
    pattern = re.compile(cfn["Parameters"]["AlertEmail"]["AllowedPattern"])
    assert pattern.match("") and pattern.match("me@example.org")
    assert not pattern.match("me at example.org")
