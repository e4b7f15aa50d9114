"""Models of upstream kube-scheduler machinery shared by the faithful baselines of the replay (issue 24 item 1):
the node cache with NodeResourcesFit filtering and scoring (cluster.py), the scheduling queue (queue.py),
DefaultPreemption (preemption.py) and the pod bookkeeping every such policy shares (framework.py). The policies
themselves are whatif/kube_scheduler.py, whatif/coscheduling.py and whatif/kube_gang.py."""
