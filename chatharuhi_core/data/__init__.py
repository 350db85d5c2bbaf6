"""The data pipeline: reading scenes as turns, evaluation, synthetic dialogues, feedback, training rows
and fine-tuning. Plain records only: no Gradio types reach this floor."""
