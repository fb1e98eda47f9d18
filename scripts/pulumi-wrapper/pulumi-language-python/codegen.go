package main

// GenerateProgram: the Python code `pulumi import --out FILE.py` writes (pkg/v3's
// codegen/python, through scripts/pulumi-host-serve's GenerateProgram, shared with the Node.js
// and Go hosts).

import (
	"context"

	"github.com/pulumi/pulumi/pkg/v3/codegen/python"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"

	hostserve "gpu-training.local/pulumi-host-serve"
)

func (h *host) GenerateProgram(
	_ context.Context, req *pulumirpc.GenerateProgramRequest,
) (*pulumirpc.GenerateProgramResponse, error) {
	return hostserve.GenerateProgram(req, python.GenerateProgram)
}
