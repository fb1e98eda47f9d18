// gen-sdk writes the gpu-training provider's SDKs from its schema, with Pulumi's own code
// generators (pkg/v3 codegen/python, codegen/nodejs, codegen/go), as Pulumi provider
// repositories lay them out: sdk/python, sdk/nodejs, sdk/go/gputraining.
//
//	go run . SCHEMA_JSON SDK_DIR
//
// Each language's folder is replaced whole, so a file the generator no longer writes goes.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/blang/semver"
	gogen "github.com/pulumi/pulumi/pkg/v3/codegen/go"
	"github.com/pulumi/pulumi/pkg/v3/codegen/nodejs"
	"github.com/pulumi/pulumi/pkg/v3/codegen/python"
	"github.com/pulumi/pulumi/pkg/v3/codegen/schema"
)

const tool = "gpu-training-gen-sdk"

// noLoader refuses every package: the schema refers to no other package.
type noLoader struct{}

func (noLoader) LoadPackage(pkg string, _ *semver.Version) (*schema.Package, error) {
	return nil, fmt.Errorf("the schema may not refer to package %q", pkg)
}

func (noLoader) LoadPackageV2(_ context.Context, d *schema.PackageDescriptor) (*schema.Package, error) {
	return nil, fmt.Errorf("the schema may not refer to package %q", d.Name)
}

func (noLoader) LoadPackageReference(pkg string, _ *semver.Version) (schema.PackageReference, error) {
	return nil, fmt.Errorf("the schema may not refer to package %q", pkg)
}

func (noLoader) LoadPackageReferenceV2(
	_ context.Context, d *schema.PackageDescriptor,
) (schema.PackageReference, error) {
	return nil, fmt.Errorf("the schema may not refer to package %q", d.Name)
}

func write(dir string, files map[string][]byte) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	for name, content := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, content, 0o644); err != nil {
			return err
		}
	}
	return nil
}

func run(schemaPath, sdkDir string) error {
	raw, err := os.ReadFile(schemaPath)
	if err != nil {
		return err
	}
	var spec schema.PackageSpec
	if err := json.Unmarshal(raw, &spec); err != nil {
		return fmt.Errorf("%s: %w", schemaPath, err)
	}
	bind := func() (*schema.Package, error) {
		pkg, diags, err := schema.BindSpec(spec, noLoader{}, schema.ValidationOptions{})
		if err != nil {
			return nil, err
		}
		if diags.HasErrors() {
			return nil, diags
		}
		return pkg, nil
	}
	// Each generator decodes its language's options into the package: one binding each.
	pkg, err := bind()
	if err != nil {
		return err
	}
	files, err := python.GeneratePackage(tool, pkg, nil, noLoader{})
	if err != nil {
		return fmt.Errorf("python: %w", err)
	}
	if err := write(filepath.Join(sdkDir, "python"), files); err != nil {
		return err
	}
	if pkg, err = bind(); err != nil {
		return err
	}
	files, err = nodejs.GeneratePackage(tool, pkg, nil, nil, false, noLoader{})
	if err != nil {
		return fmt.Errorf("nodejs: %w", err)
	}
	if err := write(filepath.Join(sdkDir, "nodejs"), files); err != nil {
		return err
	}
	if pkg, err = bind(); err != nil {
		return err
	}
	files, err = gogen.GeneratePackage(tool, pkg, nil)
	if err != nil {
		return fmt.Errorf("go: %w", err)
	}
	return write(filepath.Join(sdkDir, "go"), files)
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: gen-sdk SCHEMA_JSON SDK_DIR")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "gen-sdk:", err)
		os.Exit(1)
	}
}
