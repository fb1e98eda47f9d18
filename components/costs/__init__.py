"""What a job costs and whether it fits: prices, price sheets, quotas and the guardrails."""

__all__: list[str] = []
