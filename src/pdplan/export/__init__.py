"""L4 launch-file exporters for vLLM / SGLang / Dynamo / llm-d."""
