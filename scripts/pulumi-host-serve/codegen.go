package hostserve

// GenerateProgram: the code `pulumi import --out` prints for the resources it imported (and
// `pulumi convert` writes), as the upstream language hosts make it: the engine's PCL program
// bound against the packages' schemas (served by the engine's loader at loader_target) and
// rendered by one of pkg/v3's generators (codegen/nodejs, codegen/go, codegen/python), at the
// CLI's pinned version. Each host passes its language's generator.

import (
	"errors"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/pulumi/pulumi/pkg/v3/codegen/hcl2/syntax"
	"github.com/pulumi/pulumi/pkg/v3/codegen/pcl"
	"github.com/pulumi/pulumi/pkg/v3/codegen/schema"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/plugin"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
)

// Generator renders a bound program as source files of one language.
type Generator func(program *pcl.Program) (map[string][]byte, hcl.Diagnostics, error)

// GenerateProgram answers the engine's GenerateProgram request with generate's files.
func GenerateProgram(
	req *pulumirpc.GenerateProgramRequest, generate Generator,
) (*pulumirpc.GenerateProgramResponse, error) {
	loader, err := schema.NewLoaderClient(req.GetLoaderTarget())
	if err != nil {
		return nil, err
	}
	defer loader.Close()

	parser := syntax.NewParser()
	names := make([]string, 0, len(req.GetSource()))
	for name := range req.GetSource() {
		names = append(names, name)
	}
	sort.Strings(names) // the same program, the same code
	for _, name := range names {
		if err := parser.ParseFile(strings.NewReader(req.GetSource()[name]), name); err != nil {
			return nil, err
		}
		if parser.Diagnostics.HasErrors() {
			return &pulumirpc.GenerateProgramResponse{
				Diagnostics: plugin.HclDiagnosticsToRPCDiagnostics(parser.Diagnostics),
			}, nil
		}
	}

	options := []pcl.BindOption{pcl.PreferOutputVersionedInvokes}
	if !req.GetStrict() {
		// `pulumi import` binds loosely: its code may name a parent or provider it does not declare.
		options = append(options, pcl.NonStrictBindOptions()...)
	}
	program, diags, err := pcl.BindProgram(parser.Files, schema.NewCachedLoader(loader), options...)
	if err != nil {
		return nil, err
	}
	rpcDiags := plugin.HclDiagnosticsToRPCDiagnostics(diags)
	if diags.HasErrors() {
		return &pulumirpc.GenerateProgramResponse{Diagnostics: rpcDiags}, nil
	}
	if program == nil {
		return nil, errors.New("the PCL program did not bind")
	}
	files, diags, err := generate(program)
	if err != nil {
		return nil, err
	}
	rpcDiags = append(rpcDiags, plugin.HclDiagnosticsToRPCDiagnostics(diags)...)
	return &pulumirpc.GenerateProgramResponse{Source: files, Diagnostics: rpcDiags}, nil
}
