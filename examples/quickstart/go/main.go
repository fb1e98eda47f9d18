// A training job and a hyperparameter tuning job on the gpu-training provider plugin.
package main

import (
	"github.com/gpu-training/pulumi-gpu-training/sdk/go/gputraining/vertex"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

const image = "us-docker.pkg.dev/my-project/trainers/train:v1"

func main() {
	pulumi.Run(func(ctx *pulumi.Context) error {
		train, err := vertex.NewTrainingJob(ctx, "train", &vertex.TrainingJobArgs{
			Labels: pulumi.StringMap{"team": pulumi.String("ml")},
			JobSpec: vertex.CustomJobSpecArgs{
				WorkerPoolSpecs: vertex.WorkerPoolSpecArray{
					vertex.WorkerPoolSpecArgs{
						MachineSpec: vertex.MachineSpecArgs{
							MachineType:      pulumi.String("n1-standard-4"),
							AcceleratorType:  pulumi.String("NVIDIA_TESLA_T4"),
							AcceleratorCount: pulumi.Int(1),
						},
						ReplicaCount: pulumi.Int(1),
						ContainerSpec: vertex.ContainerSpecArgs{
							ImageUri: pulumi.String(image),
							Args:     pulumi.StringArray{pulumi.String("--epochs"), pulumi.String("2")},
						},
					},
				},
				Scheduling: vertex.SchedulingArgs{Timeout: pulumi.String("600s")},
			},
			WaitFor: pulumi.String("succeeded"),
		})
		if err != nil {
			return err
		}
		tune, err := vertex.NewHyperparameterTuningJob(ctx, "tune", &vertex.HyperparameterTuningJobArgs{
			Labels:             pulumi.StringMap{"team": pulumi.String("ml")},
			MaxTrialCount:      pulumi.Int(3),
			ParallelTrialCount: pulumi.Int(2),
			StudySpec: vertex.StudySpecArgs{
				Metrics: vertex.StudySpecMetricSpecArray{
					vertex.StudySpecMetricSpecArgs{MetricId: pulumi.String("loss"), Goal: pulumi.String("MINIMIZE")},
				},
				Parameters: vertex.StudySpecParameterSpecArray{
					vertex.StudySpecParameterSpecArgs{
						ParameterId: pulumi.String("learning_rate"),
						DiscreteValueSpec: vertex.StudySpecParameterSpecDiscreteValueSpecArgs{
							Values: pulumi.Float64Array{pulumi.Float64(0.01), pulumi.Float64(0.05), pulumi.Float64(0.1)},
						},
					},
				},
				Algorithm: pulumi.String("GRID_SEARCH"),
			},
			TrialJobSpec: vertex.CustomJobSpecArgs{
				WorkerPoolSpecs: vertex.WorkerPoolSpecArray{
					vertex.WorkerPoolSpecArgs{
						MachineSpec:   vertex.MachineSpecArgs{MachineType: pulumi.String("n1-standard-4")},
						ReplicaCount:  pulumi.Int(1),
						ContainerSpec: vertex.ContainerSpecArgs{ImageUri: pulumi.String(image)},
					},
				},
			},
			WaitFor: pulumi.String("succeeded"),
		})
		if err != nil {
			return err
		}
		ctx.Export("trainState", train.State)
		ctx.Export("tuneState", tune.State)
		ctx.Export("bestTrial", tune.BestTrial)
		return nil
	})
}
