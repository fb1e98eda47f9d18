// Vertex AI CustomJobs and HyperparameterTuningJobs, checked before they run (machine, GPUs, region, image, cost, quota) and never started twice.
package gputraining
