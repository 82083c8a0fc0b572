#!/bin/sh
echo "starting ${NOMAD_TASK_NAME} on %{node}"
