// Command pulumi-language-python is a small Python language host for the Pulumi engine.
//
// It is our own code, written for this project because the upstream language host module is not
// served by the Go module registry that this project's machines can reach (see
// docs/pulumi-toolchain.md). It implements the part of the LanguageRuntime gRPC service that
// `pulumi preview/up/refresh/destroy` need for a Python program:
//
//   - Run: starts `pulumi-language-python-exec` (the SDK's launcher script, installed beside this
//     binary by scripts/install-pulumi) with the Python interpreter selected by the project's
//     `virtualenv` / `toolchain` runtime options, passing the stack config through PULUMI_CONFIG;
//     the program ends quietly on the SIGINT with which the engine stops the host (no
//     KeyboardInterrupt traceback in the engine's output).
//   - RunPlugin: runs a Python plugin directory's __main__.py (e.g. a pulumi-policy pack given to
//     `pulumi preview --policy-pack`) with the same interpreter selection.
//   - GetPluginInfo, GetRequiredPlugins/GetRequiredPackages (none: plugins load on demand),
//     InstallDependencies, About, GetProgramDependencies, Handshake, Cancel.
//   - GenerateProgram (codegen.go): the Python code `pulumi import --out FILE.py` writes, by
//     pkg/v3's codegen/python.
//
// Everything else (GenerateProject and GeneratePackage for `pulumi convert`/`package gen-sdk`,
// `pulumi new` templating, Pack, Link, ...) answers Unimplemented.
//
// The engine starts it as `pulumi-language-python [flags] <engine-address>`; it prints the port
// it listens on, on one line, and serves until the engine stops it. That serve loop, the RPCs
// answered alike and how Run passes the config and reads the program's exit are
// scripts/pulumi-host-serve's, shared with the Go and Node.js hosts.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/common/util/rpcutil"
	"github.com/pulumi/pulumi/sdk/v3/go/common/version"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/pulumi/pulumi/sdk/v3/python/toolchain"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	hostserve "gpu-training.local/pulumi-host-serve"
)

// execScriptName is the SDK's Python launcher that configures the runtime and runs the program.
const execScriptName = "pulumi-language-python-exec"

// runQuietOnInterrupt runs sys.argv[1] (a script, or a directory's __main__.py) as `python
// TARGET ARGS...` would, with SIGINT at its default action: the process ends without a word.
// The engine stops a language host by sending SIGINT to the host's process group, the program
// included; Python's own handler turns that into a KeyboardInterrupt, and a program still
// reporting a failed step (the resource monitor just shut down) printed its traceback into the
// engine's output. The Node.js and Go programs already end quietly on SIGINT.
const runQuietOnInterrupt = "import os, runpy, signal, sys\n" +
	"signal.signal(signal.SIGINT, signal.SIG_DFL)\n" +
	"sys.argv = sys.argv[1:]\n" +
	"target = os.path.abspath(sys.argv[0])\n" +
	"sys.path[0] = target if os.path.isdir(target) else os.path.dirname(target)\n" +
	"runpy.run_path(sys.argv[0], run_name='__main__')\n"

type host struct {
	hostserve.Base

	tracing string
}

func main() {
	h := &host{}
	// Flags of other language hosts (-root, -virtualenv, ...) are ignored: the engine sends the
	// same information in ProgramInfo with every request.
	for _, arg := range os.Args[1:] {
		if strings.HasPrefix(arg, "-tracing=") || strings.HasPrefix(arg, "--tracing=") {
			h.tracing = arg[strings.Index(arg, "=")+1:]
		}
	}
	hostserve.Main("pulumi-language-python", h)
}

// pythonToolchain builds the toolchain (pip, poetry or uv, with the virtualenv option) that the
// project's Pulumi.yaml selects.
func pythonToolchain(info *pulumirpc.ProgramInfo) (toolchain.Toolchain, error) {
	opts := toolchain.PythonOptions{
		Root:       info.GetRootDirectory(),
		ProgramDir: info.GetProgramDirectory(),
		Toolchain:  toolchain.Auto,
	}
	if opts.ProgramDir == "" {
		opts.ProgramDir = opts.Root
	}
	fields := info.GetOptions().GetFields()
	if v, ok := fields["virtualenv"]; ok {
		opts.Virtualenv = stringOption(v)
	}
	if v, ok := fields["toolchain"]; ok {
		switch name := stringOption(v); name {
		case "", "auto":
		case "pip":
			opts.Toolchain = toolchain.Pip
		case "poetry":
			opts.Toolchain = toolchain.Poetry
		case "uv":
			opts.Toolchain = toolchain.Uv
		default:
			return nil, fmt.Errorf("unsupported Python toolchain %q in Pulumi.yaml (pip, poetry or uv)", name)
		}
	}
	return toolchain.ResolveToolchain(opts)
}

func stringOption(v *structpb.Value) string {
	if s, ok := v.GetKind().(*structpb.Value_StringValue); ok {
		return s.StringValue
	}
	return ""
}

// findExecScript looks for the SDK launcher beside this binary (following the symlink that
// scripts/install-pulumi puts in .tools/bin), then on PATH.
func findExecScript() (string, error) {
	var dirs []string
	if self, err := os.Executable(); err == nil {
		dirs = append(dirs, filepath.Dir(self))
		if real, err := filepath.EvalSymlinks(self); err == nil {
			dirs = append(dirs, filepath.Dir(real))
		}
	}
	for _, dir := range dirs {
		candidate := filepath.Join(dir, execScriptName)
		if st, err := os.Stat(candidate); err == nil && !st.IsDir() {
			return candidate, nil
		}
	}
	if p, err := exec.LookPath(execScriptName); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("%s was not found beside %s nor on PATH; run scripts/install-pulumi",
		execScriptName, strings.Join(dirs, " or "))
}

func (h *host) Run(ctx context.Context, req *pulumirpc.RunRequest) (*pulumirpc.RunResponse, error) {
	info := req.GetInfo()
	if info == nil {
		info = &pulumirpc.ProgramInfo{RootDirectory: req.GetPwd(), ProgramDirectory: req.GetPwd()}
	}
	tc, err := pythonToolchain(info)
	if err != nil {
		return &pulumirpc.RunResponse{Error: err.Error()}, nil
	}
	if err := tc.ValidateVenv(ctx); err != nil {
		return &pulumirpc.RunResponse{Error: err.Error()}, nil
	}
	script, err := findExecScript()
	if err != nil {
		return &pulumirpc.RunResponse{Error: err.Error()}, nil
	}

	engine, tracing := h.EngineAddress(), h.tracing

	program := req.GetProgram()
	if program == "" {
		program = "."
	}
	args := []string{
		"-u", "-c", runQuietOnInterrupt, script,
		"--monitor", req.GetMonitorAddress(),
		"--engine", engine,
		"--project", req.GetProject(),
		"--stack", req.GetStack(),
		"--pwd", req.GetPwd(),
		"--dry_run", strconv.FormatBool(req.GetDryRun()),
		"--parallel", strconv.Itoa(int(req.GetParallel())),
		"--organization", req.GetOrganization(),
		"--root_directory", info.GetRootDirectory(),
	}
	if tracing != "" {
		args = append(args, "--tracing", tracing)
	}
	args = append(args, program)
	args = append(args, req.GetArgs()...)

	cmd, err := tc.Command(ctx, args...)
	if err != nil {
		return &pulumirpc.RunResponse{Error: fmt.Sprintf("could not prepare the Python command: %v", err)}, nil
	}
	configEnv, err := hostserve.ConfigEnv(req)
	if err != nil {
		return nil, err
	}
	env := cmd.Env
	if env == nil {
		env = os.Environ()
	}
	cmd.Env = append(env, configEnv...)
	cmd.Dir = req.GetPwd()
	return hostserve.RunCommand(cmd, "Python"), nil
}

func (h *host) InstallDependencies(
	req *pulumirpc.InstallDependenciesRequest,
	server grpc.ServerStreamingServer[pulumirpc.InstallDependenciesResponse],
) error {
	info := req.GetInfo()
	if info == nil {
		info = &pulumirpc.ProgramInfo{RootDirectory: req.GetDirectory(), ProgramDirectory: req.GetDirectory()}
	}
	tc, err := pythonToolchain(info)
	if err != nil {
		return err
	}
	closer, stdout, stderr, err := rpcutil.MakeInstallDependenciesStreams(server, req.GetIsTerminal())
	if err != nil {
		return err
	}
	defer closer.Close()
	dir := info.GetProgramDirectory()
	if dir == "" {
		dir = req.GetDirectory()
	}
	if err := tc.InstallDependencies(server.Context(), dir, req.GetUseLanguageVersionTools(), true,
		stdout, stderr); err != nil {
		return err
	}
	return closer.Close()
}

func (h *host) About(ctx context.Context, req *pulumirpc.AboutRequest) (*pulumirpc.AboutResponse, error) {
	tc, err := pythonToolchain(req.GetInfo())
	if err != nil {
		return nil, err
	}
	about, err := tc.About(ctx)
	if err != nil {
		return nil, err
	}
	return &pulumirpc.AboutResponse{
		Executable: about.PythonExecutable,
		Version:    about.PythonVersion.String(),
		Metadata:   map[string]string{"languageHost": "gpu-training minimal Python host " + version.Version},
	}, nil
}

func (h *host) GetProgramDependencies(
	ctx context.Context, req *pulumirpc.GetProgramDependenciesRequest,
) (*pulumirpc.GetProgramDependenciesResponse, error) {
	tc, err := pythonToolchain(req.GetInfo())
	if err != nil {
		return nil, err
	}
	pkgs, err := tc.ListPackages(ctx, req.GetTransitiveDependencies())
	if err != nil {
		return nil, err
	}
	resp := &pulumirpc.GetProgramDependenciesResponse{}
	for _, p := range pkgs {
		resp.Dependencies = append(resp.Dependencies, &pulumirpc.DependencyInfo{Name: p.Name, Version: p.Version})
	}
	return resp, nil
}

// RunPlugin runs `python <plugin dir> <args>` (the directory's __main__.py), streaming its output
// and finally its exit code to the engine.
func (h *host) RunPlugin(
	req *pulumirpc.RunPluginRequest, server grpc.ServerStreamingServer[pulumirpc.RunPluginResponse],
) error {
	info := req.GetInfo()
	if info == nil {
		return status.Error(codes.InvalidArgument, "RunPlugin needs the plugin's ProgramInfo")
	}
	dir := info.GetProgramDirectory()
	if _, err := os.Stat(filepath.Join(dir, "__main__.py")); err != nil {
		return fmt.Errorf("this Python language host runs plugins from a __main__.py, none in %s: %w", dir, err)
	}
	tc, err := pythonToolchain(info)
	if err != nil {
		return err
	}
	if err := tc.ValidateVenv(server.Context()); err != nil {
		return err
	}
	cmd, err := tc.Command(server.Context(),
		append([]string{"-u", "-c", runQuietOnInterrupt, dir}, req.GetArgs()...)...)
	if err != nil {
		return err
	}
	closer, stdout, stderr, err := rpcutil.MakeRunPluginStreams(server, false)
	if err != nil {
		return err
	}
	defer closer.Close()
	env := cmd.Env
	if env == nil {
		env = os.Environ()
	}
	cmd.Env = append(env, req.GetEnv()...)
	cmd.Dir = req.GetPwd()
	cmd.Stdout, cmd.Stderr = stdout, stderr

	if err := cmd.Run(); err != nil {
		var exitErr *exec.ExitError
		if !errors.As(err, &exitErr) {
			return fmt.Errorf("could not run the Python plugin in %s: %w", dir, err)
		}
		if err := closer.Close(); err != nil {
			return err
		}
		return server.Send(&pulumirpc.RunPluginResponse{
			Output: &pulumirpc.RunPluginResponse_Exitcode{Exitcode: int32(exitErr.ExitCode())}, //nolint:gosec
		})
	}
	return closer.Close()
}
