package main

// GenerateProgram: the Go code `pulumi import --out FILE.go` writes (pkg/v3's codegen/go,
// through scripts/pulumi-host-serve's GenerateProgram, shared with the Node.js and Python hosts).

import (
	"context"

	gogen "github.com/pulumi/pulumi/pkg/v3/codegen/go"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"

	hostserve "gpu-training.local/pulumi-host-serve"
)

func (h *host) GenerateProgram(
	_ context.Context, req *pulumirpc.GenerateProgramRequest,
) (*pulumirpc.GenerateProgramResponse, error) {
	return hostserve.GenerateProgram(req, gogen.GenerateProgram)
}
