"""The deploy templates generated from template.yaml: one template, never copies that drift.

  template-managed-instances.yaml          template.yaml on Lambda Managed Instances
  starter/template.yaml                    template.yaml with no binary named
  starter/template-managed-instances.yaml  both

Lambda Managed Instances is a compute type fixed when the function is created ("cannot be added
or removed afterwards"), so it is a template of its own rather than a parameter: template.yaml
then needs no Fn::If around the function's CapacityProviderConfig, which SAM refuses unless
AWS::LanguageExtensions resolves it first. Each edit below names the text it replaces, which
must occur exactly once, so a change to template.yaml that moves it fails here, not at deploy.

SAM's cargo-lambda build needs `BuildProperties: Binary` only when the crate at `CodeUri` has
more than one binary ("Binary – Optional. Specify when a single Cargo package defines more than
one binary", https://docs.aws.amazon.com/serverless-application-model/latest/developerguide/building-rust.html).
The repository's templates build at the workspace root, whose members are the library (with its
examples), the basket (basket/) and the conformance fixture, so they name `basket`; the starter is a crate with one binary, so its templates name none, and the one name a
user changes is the package's in starter/Cargo.toml.

  python3 scripts/templates.py           writes the three files
  python3 scripts/templates.py --check   fails if any differs from what it would write
"""

import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent

# --- Lambda Managed Instances: (the text in template.yaml, what replaces it) ----------------
MANAGED_INSTANCES = [
    (
        """# Plain SAM, no other transform: every Fn::If below is one CloudFormation resolves itself, so
# the default deploy depends on nothing AWS::LanguageExtensions would have to rewrite. Lambda
# Managed Instances, a compute type fixed when the function is created, is a template of its
# own, template-managed-instances.yaml, generated from this one by scripts/templates.py.
""",
        """# Generated from template.yaml by scripts/templates.py: the same stack, with the function on
# Lambda Managed Instances (EC2 instances Lambda runs in your VPC, each execution environment
# serving several invocations at once). Change template.yaml or the script and regenerate; the
# test command fails if this file differs. Plain SAM like the original: no Fn::If around
# CapacityProviderConfig (SAM refuses one there), since here it is always set.
# https://docs.aws.amazon.com/lambda/latest/dg/lambda-managed-instances.html
""",
    ),
    (
        "stateless) on AWS Lambda, with its DynamoDB",
        "stateless) on AWS Lambda Managed Instances\n  (EC2 instances in your VPC), with its DynamoDB",
    ),
    (
        "Deploy with `sam build && sam deploy --guided`; see docs/deploy.md.",
        "Deploy with `sam build -t template-managed-instances.yaml && sam deploy --guided`; see\n"
        "  docs/operations.md (Lambda Managed Instances).",
    ),
    (
        """      - Label: { default: "Operations""",
        """      - Label: { default: Lambda Managed Instances }
        Parameters: [ManagedInstancesSubnetIds, ManagedInstancesSecurityGroupIds, ManagedInstancesMaxConcurrency, ManagedInstancesMaxVCpus]
      - Label: { default: "Operations""",
    ),
    (
        """  MemorySize:
    Type: Number
    Default: 256
    MinValue: 128
    MaxValue: 10240
""",
        """  # Each execution environment gets memory per vCPU (2 GiB at least), and that cannot exceed
  # the function's memory: hence 2048 MB up.
  # https://docs.aws.amazon.com/serverless-application-model/latest/developerguide/sam-property-function-capacityproviderconfig.html
  MemorySize:
    Type: Number
    Default: 2048
    MinValue: 2048
    MaxValue: 32768
    Description: >
      The function's memory in MB: each execution environment gets 2 GiB per vCPU, and the
      ratio cannot exceed the function's memory, so 2048 is the least.
""",
    ),
    (
        "  Metrics:\n    Type: String\n",
        """  # Required, with no default: the capacity provider's VpcConfig needs SubnetIds (1 to 16) and
  # SecurityGroupIds (1 to 5), and the patterns refuse anything else before a resource is made.
  # Strings split on commas, so the count is in the pattern.
  # https://docs.aws.amazon.com/lambda/latest/dg/lambda-managed-instances-capacity-providers.html
  # https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-resource-lambda-capacityprovider.html
  ManagedInstancesSubnetIds:
    Type: String
    AllowedPattern: "^subnet-[0-9a-z]+(,subnet-[0-9a-z]+){0,15}$"
    ConstraintDescription: 1 to 16 subnet IDs separated by commas, no spaces
    Description: >
      1 to 16 subnet IDs the instances run in, comma-separated. Give them a route (NAT gateway
      or VPC endpoints) to every service the function calls: DynamoDB, Lambda Invoke (task
      rounds), Secrets Manager or SSM (the request-state key, the built-in authorization
      server's secrets), and with auth on the issuer's metadata and JWKS URLs (or the built-in
      authorization server's identity provider) on the internet (NAT).
  ManagedInstancesSecurityGroupIds:
    Type: String
    AllowedPattern: "^sg-[0-9a-z]+(,sg-[0-9a-z]+){0,4}$"
    ConstraintDescription: 1 to 5 security group IDs separated by commas, no spaces
    Description: 1 to 5 security group IDs for the instances, comma-separated.
  ManagedInstancesMaxConcurrency:
    Type: Number
    Default: 0
    MinValue: 0
    MaxValue: 1600
    Description: >
      The most invocations Lambda sends one execution environment at once
      (PerExecutionEnvironmentMaxConcurrency, seen by the function as
      AWS_LAMBDA_MAX_CONCURRENCY). 0 = Lambda's default for Rust, 8 per vCPU.
  ManagedInstancesMaxVCpus:
    Type: Number
    Default: 0
    MinValue: 0
    MaxValue: 15000
    Description: >
      Spend cap: the most vCPUs the capacity provider may run across all its instances
      (MaxVCpuCount, at least 2). 0 = no cap of ours (Lambda's default).
  Metrics:
    Type: String
""",
    ),
    (
        "\nConditions:\n",
        """  # MaxVCpuCount is 2 to 15000 (0 here means "not set"), so 1 would fail when the capacity
  # provider is created, half-way through the stack.
  # https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-properties-lambda-capacityprovider-capacityproviderscalingconfig.html
  ManagedInstancesMaxVCpusIsZeroOrAtLeastTwo:
    Assertions:
      - Assert: !Not [!Equals [!Ref ManagedInstancesMaxVCpus, "1"]]
        AssertDescription: "ManagedInstancesMaxVCpus is 0 (no cap) or 2 to 15000: a capacity provider's MaxVCpuCount is at least 2."

Conditions:
""",
    ),
    (
        "\nResources:\n",
        """  HasManagedMaxConcurrency: !Not [!Equals [!Ref ManagedInstancesMaxConcurrency, "0"]]
  HasManagedMaxVCpus: !Not [!Equals [!Ref ManagedInstancesMaxVCpus, "0"]]

Resources:
""",
    ),
    (
        "      Timeout: !Ref Timeout\n",
        """      Timeout: !Ref Timeout
      # The function runs on the capacity provider below. SAM's CapacityProviderConfig (Arn,
      # PerExecutionEnvironmentMaxConcurrency) becomes AWS::Lambda::Function
      # CapacityProviderConfig.LambdaManagedInstancesCapacityProviderConfig. It sets the
      # function's compute type and must be given when the function is created; it cannot be
      # added or removed afterwards (so moving between this template and template.yaml needs a
      # new stack). The concurrency is how many invocations one execution environment is sent
      # at once (Rust's default: 8 per vCPU); the Rust runtime spawns that many workers, which
      # lambda_http::run_concurrent serves side by side.
      # https://docs.aws.amazon.com/serverless-application-model/latest/developerguide/sam-property-function-capacityproviderconfig.html
      # https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-properties-lambda-function-lambdamanagedinstancescapacityproviderconfig.html
      # https://docs.aws.amazon.com/lambda/latest/dg/lambda-managed-instances-rust.html
      # Rust on Managed Instances is the OS-only runtime provided.al2023 (this function's):
      # https://docs.aws.amazon.com/lambda/latest/dg/lambda-managed-instances-runtimes.html
      CapacityProviderConfig:
        Arn: !GetAtt McpCapacityProvider.Arn
        PerExecutionEnvironmentMaxConcurrency: !If [HasManagedMaxConcurrency, !Ref ManagedInstancesMaxConcurrency, !Ref AWS::NoValue]
      # An unqualified invocation of a Managed Instances function (the Function URL, both API
      # Gateway integrations, the task rounds' self-invoke by AWS_LAMBDA_FUNCTION_NAME) runs
      # version $LATEST.PUBLISHED, not $LATEST. CloudFormation creates that version with the
      # function; PublishToLatestPublished republishes it on every stack update, so new code and
      # configuration reach the version that is invoked.
      # https://docs.aws.amazon.com/lambda/latest/dg/lambda-managed-instances-version-publishing.html
      PublishToLatestPublished: true
""",
    ),
    (
        "  # Least privilege: write to its own log group",
        """  # --- Lambda Managed Instances ---------------------------------------------------------
  # The capacity provider: where the instances run (your subnets and security groups), which
  # architecture (the function's), and at most how many vCPUs (ManagedInstancesMaxVCpus).
  # Written as the CloudFormation resource rather than SAM's AWS::Serverless::CapacityProvider:
  # cfn-lint 1.58 cannot resolve !GetAtt <SAM capacity provider>.Arn (E1010), and this way the
  # operator role is ours and visible below.
  # https://docs.aws.amazon.com/lambda/latest/dg/lambda-managed-instances-capacity-providers.html
  # https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-resource-lambda-capacityprovider.html
  McpCapacityProvider:
    Type: AWS::Lambda::CapacityProvider
    Properties:
      VpcConfig:
        SubnetIds: !Split [",", !Ref ManagedInstancesSubnetIds]
        SecurityGroupIds: !Split [",", !Ref ManagedInstancesSecurityGroupIds]
      PermissionsConfig:
        CapacityProviderOperatorRoleArn: !GetAtt McpCapacityProviderOperatorRole.Arn
      # One architecture per capacity provider, the one the binary is built for.
      InstanceRequirements:
        Architectures: [!Ref Architecture]
      CapacityProviderScalingConfig: !If
        - HasManagedMaxVCpus
        - MaxVCpuCount: !Ref ManagedInstancesMaxVCpus
        - !Ref AWS::NoValue

  # The operator role Lambda assumes to run and manage the EC2 instances of the capacity
  # provider: trusted by lambda.amazonaws.com, with AWS's managed policy
  # AWSLambdaManagedEC2ResourceOperator (the minimum the guide names). It is not the
  # function's execution role, which stays McpRole.
  # https://docs.aws.amazon.com/lambda/latest/dg/lambda-managed-instances-operator-role.html
  # https://docs.aws.amazon.com/aws-managed-policy/latest/reference/AWSLambdaManagedEC2ResourceOperator.html
  McpCapacityProviderOperatorRole:
    Type: AWS::IAM::Role
    Properties:
      AssumeRolePolicyDocument:
        Version: "2012-10-17"
        Statement:
          - Effect: Allow
            Principal:
              Service: lambda.amazonaws.com
            Action: sts:AssumeRole
      ManagedPolicyArns:
        - !Sub "arn:${AWS::Partition}:iam::aws:policy/AWSLambdaManagedEC2ResourceOperator"

  # Least privilege: write to its own log group""",
    ),
    (
        """      # The version an unqualified (self-)invoke runs.
      Qualifier: $LATEST
""",
        """      # The version an unqualified (self-)invoke runs: $LATEST.PUBLISHED on Managed Instances.
      # https://docs.aws.amazon.com/lambda/latest/dg/lambda-managed-instances-version-publishing.html
      Qualifier: $LATEST.PUBLISHED
""",
    ),
]

# --- The starter: no binary named ---------------------------------------------------------
NAMED_BINARY = ("      BuildProperties:\n        Binary: basket\n", "")
STARTER_HEADER = (
    "# Generated from mcp-lambda's {source} by scripts/templates.py: the same template,\n"
    "# with no binary named (SAM builds the one binary of the crate at CodeUri). Change the\n"
    "# original and regenerate; the test command fails if the two differ.\n"
)


def apply(text: str, edits, name: str) -> str:
    for old, new in edits:
        if text.count(old) != 1:
            sys.exit(f"{name}: expected this text in template.yaml exactly once:\n{old}")
        text = text.replace(old, new)
    return text


def generated() -> dict[str, str]:
    source = (ROOT / "template.yaml").read_text()
    managed = apply(source, MANAGED_INSTANCES, "template-managed-instances.yaml")
    return {
        "template-managed-instances.yaml": managed,
        "starter/template.yaml": STARTER_HEADER.format(source="template.yaml")
        + apply(source, [NAMED_BINARY], "starter/template.yaml"),
        "starter/template-managed-instances.yaml": STARTER_HEADER.format(
            source="template-managed-instances.yaml"
        )
        + apply(managed, [NAMED_BINARY], "starter/template-managed-instances.yaml"),
    }


def main() -> None:
    files = generated()
    if sys.argv[1:] == ["--check"]:
        stale = [p for p, text in files.items() if not (ROOT / p).exists() or (ROOT / p).read_text() != text]
        if stale:
            sys.exit(f"{', '.join(stale)} differ from template.yaml: run python3 scripts/templates.py")
        print(f"{', '.join(files)}: generated from template.yaml, unchanged")
    else:
        for path, text in files.items():
            (ROOT / path).write_text(text)


main()
