job "training" {
  type = "batch"

  group "train" {
    task "train" {
      driver = "docker"
      config {
        image = "pytorch/pytorch:2.4.1-cuda12.1-cudnn9-runtime"
        args  = ["python", "train.py"]
      }

      resources {
        cores  = 8
        memory = 32768

        device "nvidia/gpu" {
          count = 2

          constraint {
            attribute = "${device.attr.memory}"
            operator  = ">="
            value     = "16 GiB"
          }

          constraint {
            attribute = "${device.model}"
            value     = "Tesla V100-SXM2-16GB"
          }

          affinity {
            attribute = "${device.attr.cuda_cores}"
            operator  = ">="
            value     = "5000"
            weight    = 75
          }
        }
      }
    }
  }
}
